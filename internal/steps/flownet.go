package steps

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

// flownetSpec says what to run.
type flownetSpec struct {
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

// flownetCall is one FlowNet process and what it returned.
type flownetCall struct {
	name string
	sub  string
	argv []string // as the process received it (launcher and args included)
	env  []string // as the process received it (never written to the record)
	proc *proc.Process

	collected bool
	result    proc.Result
	stdout    string
	stderr    string
	json      map[string]any // the JSON object it printed on stdout (--json), if any
	runID     string         // the run id it reported (text or JSON output)
	outcome   string         // NEW, RESUME, NOOP, REJECTED: from the output
	network   string         // the rendered network id it acts on
}

// startFlowNet starts one FlowNet command in the scenario (not waiting for it).
func startFlowNet(ctx context.Context, spec flownetSpec) (*flownetCall, error) {
	sc := sceneOf(ctx)
	fx := fixturesOf(ctx)
	procs := processesOf(ctx)
	name := spec.Name
	if name == "" {
		name = procs.nextName("flownet-" + spec.Sub)
	}
	dir := filepath.Join(sc.st.WorkDir, "flownet-"+procFileName(name))
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
	if err := os.MkdirAll(sc.ksqlWorkDir, 0o755); err != nil {
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
	path, argv := sc.suite.Target.FlowNet.With(args...)
	c := &flownetCall{name: name, sub: spec.Sub, env: env, network: spec.Network}
	if c.network == "" && fx.current() != nil {
		c.network = fx.current().NetworkID
	}
	np := &namedProc{name: name, kind: kindFlowNet, flownet: c}
	if err := startChild(ctx, np, proc.Spec{Path: path, Args: argv, Env: env, Dir: flownetDir(sc)}); err != nil {
		return nil, err
	}
	c.proc = np.proc
	c.argv = np.proc.Argv()
	return c, nil
}

// flownetEnv is the environment of every FlowNet command of the scope: the target's, what
// the groups above add (the CSV IO root, the kSQL-Flow proxy's config copy), the scope's parties.
func flownetEnv(sc *scene, fx *fixtureState) []string {
	env := sc.suite.Target.FlowNetEnv("", sc.ksqlWorkDir)
	for _, add := range sc.hooks.flownetEnv {
		env = append(env, add(sc, fx)...)
	}
	return append(env,
		"KSQL_FLOWNET_REQUESTED_BY="+fx.scope().Principal("requester"),
		"KSQL_FLOWNET_SERVICE_PRINCIPAL="+fx.scope().Principal("service"),
		"KSQL_FLOWNET_HOST="+fx.scope().Host(),
	)
}

// flownetDir is where FlowNet runs: the SUT checkout on a live target, else the scenario
// work dir.
func flownetDir(sc *scene) string {
	if d := sc.suite.Target.FlowNet.Dir; d != "" {
		return d
	}
	return sc.st.WorkDir
}

// finish waits for the call to exit (within the step's deadline) and collects its output.
func (c *flownetCall) finish(ctx context.Context) error {
	if c.collected {
		return nil
	}
	if _, err := waitExit(ctx, c.name, c.proc); err != nil {
		return err
	}
	return c.collect()
}

// reportedLine is FlowNet's text summary of run-network (product-contract §1.3).
var reportedLine = regexp.MustCompile(`(?m)^(NEW|RESUME): Run (\S+) finished with aggregate |^NO-OP: Run (\S+) is already `)

// collect reads what an exited call printed: stdout, stderr, its JSON and the run id.
func (c *flownetCall) collect() error {
	if c.collected {
		return nil
	}
	res, done := c.proc.Exited()
	if !done {
		return fmt.Errorf("%s has not exited", c.name)
	}
	out, err := c.proc.Stdout()
	if err != nil {
		return fmt.Errorf("read stdout of %s: %w", c.name, err)
	}
	errOut, err := c.proc.Stderr()
	if err != nil {
		return fmt.Errorf("read stderr of %s: %w", c.name, err)
	}
	c.result, c.stdout, c.stderr, c.collected = res, out, errOut, true
	c.json, c.outcome, c.runID = parseRunOutput(out)
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
	if m := reportedLine.FindStringSubmatch(out); m != nil {
		if m[1] != "" {
			return nil, m[1], m[2]
		}
		return nil, "NOOP", m[3]
	}
	return nil, "", ""
}

// argAfter returns the value that follows flag in the argv the process received.
func (c *flownetCall) argAfter(flag string) string {
	for i := 0; i+1 < len(c.argv); i++ {
		if c.argv[i] == flag {
			return c.argv[i+1]
		}
	}
	return ""
}

// subArg returns the n-th positional argument after the subcommand in the argv the process
// received (0: the network file of run-network).
func (c *flownetCall) subArg(n int) string {
	for i, a := range c.argv {
		if a == c.sub && i+1+n < len(c.argv) {
			return c.argv[i+1+n]
		}
	}
	return ""
}

// envValue returns a variable of the environment the process received.
func (c *flownetCall) envValue(name string) string {
	v := ""
	for _, kv := range c.env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val // the last one wins, as in the child
		}
	}
	return v
}

// describe is the call's outcome for notes: exit and what it reported.
func (c *flownetCall) describe() string {
	b, _ := json.Marshal(map[string]any{"exit": c.result.String(), "outcome": c.outcome, "run_id": c.runID})
	return string(b)
}

// reasonGiven is the reason file content a call received.
func (c *flownetCall) reasonGiven() (string, error) {
	b, err := os.ReadFile(c.argAfter("--reason-file"))
	if err != nil {
		return "", fmt.Errorf("reason file of %s: %w", c.name, err)
	}
	return strings.TrimSpace(string(b)), nil
}
