package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
)

// The one FlowNet command runner. Every FlowNet subcommand a scenario drives (run-network,
// status, cancel-run, archive-run, force-unlock-network, resolve-node, record-job-unlock,
// poll-requests) starts here: argv, environment and reason/evidence files are built in one
// place, and what came back (exit code, signal, stdout, stderr, the JSON it printed, the run
// id it reported) is kept on the call. The scenario record gets argv and redacted output
// tails through the process registry; the environment (tokens) is kept in memory only.

// FlownetSpec says what to run.
type FlownetSpec struct {
	Name string   // process name; empty: generated from the subcommand
	Sub  string   // subcommand: run-network, status, cancel-run, …
	Args []string // arguments after the subcommand
	// Files are written into the call's own directory before it starts; every argument
	// equal to "@<key>" is replaced by the written file's path (reason and evidence files).
	Files map[string]string
	// Env is added to the target's FlowNet environment (later entries win).
	Env []string
	// Network is the rendered network id the call acts on; empty: the current fixture
	// network. The run a step means is the one its network's calls reported.
	Network string
}

// FlownetCall is one FlowNet process and what it returned.
type FlownetCall struct {
	Name string
	Sub  string
	argv []string // as the process received it (launcher and args included)
	env  []string // as the process received it (never written to the record)
	proc *proc.Process

	collected bool
	Result    proc.Result
	Stdout    string
	Stderr    string
	JSON      map[string]any // the JSON object it printed on stdout (--json), if any
	runID     string         // the run id it reported (text or JSON output)
	outcome   string         // NEW, RESUME, NOOP, REJECTED: from the output
	network   string         // the rendered network id it acts on
}

// StartFlowNet starts one FlowNet command in the scenario (not waiting for it).
func StartFlowNet(ctx context.Context, spec FlownetSpec) (*FlownetCall, error) {
	sc := SceneOf(ctx)
	fx := FixturesOf(ctx)
	procs := ProcessesOf(ctx)
	name := spec.Name
	if name == "" {
		name = procs.nextName("flownet-" + spec.Sub)
	}
	dir := filepath.Join(sc.St.WorkDir, "flownet-"+ProcFileName(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := append([]string{spec.Sub}, spec.Args...)
	for i, a := range args {
		key, ok := strings.CutPrefix(a, "@")
		if !ok {
			continue
		}
		content, ok := spec.Files[key]
		if !ok {
			return nil, fmt.Errorf("FlowNet %s: argument %s names no file", spec.Sub, a)
		}
		path := filepath.Join(dir, key)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return nil, fmt.Errorf("write %s for FlowNet %s: %w", key, spec.Sub, err)
		}
		args[i] = path
	}
	if err := os.MkdirAll(sc.KsqlWorkDir, 0o755); err != nil {
		return nil, err
	}
	for _, before := range sc.hooks.beforeFlowNet {
		if err := before(ctx, spec.Sub); err != nil {
			return nil, err
		}
	}
	env := append(flownetEnv(sc, fx), spec.Env...)
	for _, add := range sc.hooks.processEnv { // a fault or counting proxy (the proxy group)
		proxied, err := add(ctx, name)
		if err != nil {
			return nil, err
		}
		env = append(env, proxied...)
	}
	path, argv := sc.Suite.Target.FlowNet.With(args...)
	c := &FlownetCall{Name: name, Sub: spec.Sub, env: env, network: spec.Network}
	if c.network == "" && fx.Current() != nil {
		c.network = fx.Current().NetworkID
	}
	np := &NamedProc{Name: name, Kind: kindFlowNet, Flownet: c}
	if err := StartChild(ctx, np, proc.Spec{Path: path, Args: argv, Env: env, Dir: FlownetDir(sc)}); err != nil {
		return nil, err
	}
	c.proc = np.Proc
	c.argv = np.Proc.Argv()
	return c, nil
}

// flownetEnv is the environment of every FlowNet command of the scope: the target's, what
// the groups above add (the CSV IO root, the kSQL-Flow proxy's config copy), the scope's parties.
func flownetEnv(sc *Scene, fx *FixtureState) []string {
	env := sc.Suite.Target.FlowNetEnv("", sc.KsqlWorkDir)
	for _, add := range sc.hooks.flownetEnv {
		env = append(env, add(sc, fx)...)
	}
	return append(env,
		"KSQL_FLOWNET_REQUESTED_BY="+fx.Scope().Principal("requester"),
		"KSQL_FLOWNET_SERVICE_PRINCIPAL="+fx.Scope().Principal("service"),
		"KSQL_FLOWNET_HOST="+fx.Scope().Host(),
	)
}

// FlownetDir is where FlowNet runs: the SUT checkout on a live target, else the scenario
// work dir.
func FlownetDir(sc *Scene) string {
	if d := sc.Suite.Target.FlowNet.Dir; d != "" {
		return d
	}
	return sc.St.WorkDir
}

// Finish waits for the call to exit (within the step's deadline) and collects its output.
func (c *FlownetCall) Finish(ctx context.Context) error {
	if c.collected {
		return nil
	}
	if _, err := WaitExit(ctx, c.Name, c.proc); err != nil {
		return err
	}
	return c.collect()
}

// ReportedLine is FlowNet's text summary of run-network (product-contract §1.3).
var ReportedLine = regexp.MustCompile(`(?m)^(NEW|RESUME): Run (\S+) finished with aggregate |^NO-OP: Run (\S+) is already `)

// collect reads what an exited call printed: stdout, stderr, its JSON and the run id.
func (c *FlownetCall) collect() error {
	if c.collected {
		return nil
	}
	res, done := c.proc.Exited()
	if !done {
		return fmt.Errorf("%s has not exited", c.Name)
	}
	out, err := c.proc.Stdout()
	if err != nil {
		return fmt.Errorf("read stdout of %s: %w", c.Name, err)
	}
	errOut, err := c.proc.Stderr()
	if err != nil {
		return fmt.Errorf("read stderr of %s: %w", c.Name, err)
	}
	c.Result, c.Stdout, c.Stderr, c.collected = res, out, errOut, true
	c.JSON, c.outcome, c.runID = parseRunOutput(out)
	return nil
}

// parseRunOutput reads what FlowNet reported on stdout: the one JSON line of --json, or the
// text summary of run-network (`NEW|RESUME: Run <id> finished …`, `NO-OP: Run <id> …`).
func parseRunOutput(out string) (obj map[string]any, outcome, runID string) {
	if o, ok := proc.LastJSONLine(out, func(map[string]any) bool { return true }); ok {
		runID, _ = o["run_id"].(string)
		outcome, _ = o["outcome"].(string)
		return o, outcome, runID
	}
	if m := ReportedLine.FindStringSubmatch(out); m != nil {
		if m[1] != "" {
			return nil, m[1], m[2]
		}
		return nil, "NOOP", m[3]
	}
	return nil, "", ""
}

// ArgAfter returns the value that follows flag in the argv the process received.
func (c *FlownetCall) ArgAfter(flag string) string {
	for i := 0; i+1 < len(c.argv); i++ {
		if c.argv[i] == flag {
			return c.argv[i+1]
		}
	}
	return ""
}

// SubArg returns the n-th positional argument after the subcommand in the argv the process
// received (0: the network file of run-network).
func (c *FlownetCall) SubArg(n int) string {
	for i, a := range c.argv {
		if a == c.Sub && i+1+n < len(c.argv) {
			return c.argv[i+1+n]
		}
	}
	return ""
}

// ExitSubject is the coverage subject of the call's exit code (docs/coverage.md):
// `exit.<subcommand>` for the commands whose exit code the contract states.
func (c *FlownetCall) ExitSubject() string {
	switch c.Sub {
	case "run-network", "status", "force-unlock-network", "resolve-node",
		"record-job-unlock", "cancel-run", "archive-run", "poll-requests":
		return "exit." + c.Sub
	}
	return "process.flownet.exit-code"
}

// LineSubject is the coverage subject of a line of the call's output that starts with
// prefix: the contract's line head it begins with (§1), else the output as flowtest sees it.
func (c *FlownetCall) LineSubject(prefix string) string {
	heads := []struct{ head, subject string }{
		{"Error [", `text.any:"Error ["`},
		{"NEW: ", `text.run-network:"NEW|RESUME: Run "`},
		{"RESUME: ", `text.run-network:"NEW|RESUME: Run "`},
		{"RELEASED: ", `text.force-unlock-network:"RELEASED: "`},
	}
	if c.Sub == "cancel-run" {
		return `text.cancel-run:"<STATE>: CANCEL:"`
	}
	for _, h := range heads {
		if strings.HasPrefix(prefix, h.head) || strings.HasPrefix(h.head, prefix) {
			return h.subject
		}
	}
	return "process.flownet.output"
}

// EnvValue returns a variable of the environment the process received.
func (c *FlownetCall) EnvValue(name string) string {
	v := ""
	for _, kv := range c.env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val // the last one wins, as in the child
		}
	}
	return v
}

// describe is the call's outcome for notes: exit and what it reported.
func (c *FlownetCall) describe() string {
	b, _ := json.Marshal(map[string]any{"exit": c.Result.String(), "outcome": c.outcome, "run_id": c.runID})
	return string(b)
}

// ReasonGiven is the reason file content a call received.
func (c *FlownetCall) ReasonGiven() (string, error) {
	b, err := os.ReadFile(c.ArgAfter("--reason-file"))
	if err != nil {
		return "", fmt.Errorf("reason file of %s: %w", c.Name, err)
	}
	return strings.TrimSpace(string(b)), nil
}
