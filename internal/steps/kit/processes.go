package kit

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
)

// processDomain: named processes. Feature text names a process when it starts one
// (`… as "the resumed run"`) and later steps address it by that name. "the FlowNet run" is
// allowed only while exactly one FlowNet process is in play; with two, the step refuses
// and asks for a name.
type processDomain struct{}

func (d processDomain) register(reg stepdef.Registry) {
	reg.Step(`^no kSQL-Flow process of this scope is alive$`, d.noKsqlFlowProcessOfTheScope)
	reg.Step(`^`+ProcRef+` exits with code (\d+)$`, d.exitsWithCode)
}

// ProcRef is the pattern of a process reference in feature text.
const ProcRef = `(the FlowNet run|the holder|"[^"]+")`

// Process kinds. A requester is no child process: the harness's background party sending
// the request board's cancel (requests/requester.go), named here so that its name is taken like a
// process's and a step that needs a process refuses it.
const (
	kindFlowNet   = "FlowNet"
	KindKsqlFlow  = "kSQL-Flow"
	kindRequester = "requester"
)

// NamedProc is one child process the scenario started and can address.
type NamedProc struct {
	Name    string // as the feature text names it, or a generated one
	Kind    string
	Role    string // "holder" for the standalone kSQL-Flow of a lock conflict
	Scope   *scope.Scope
	Proc    *proc.Process // nil for a requester
	Flownet *FlownetCall  // set for FlowNet processes
	retired bool          // its scope was replaced by a trial's: no longer in play
}

// processState is the scenario's process table.
type processState struct {
	all []*NamedProc
}

var processKey = scenario.NewKey[processState]("processes")

func ProcessesOf(ctx context.Context) *processState { return processKey.Of(scenario.From(ctx)) }

// add names a started process; names are unique within the scenario.
func (ps *processState) add(p *NamedProc) error {
	if ps.Started(p.Name) {
		return fmt.Errorf("a process named %q was already started in this scenario", p.Name)
	}
	ps.all = append(ps.all, p)
	return nil
}

// AddRequester names the requester's background cancel in the table: its name is taken.
func (ps *processState) AddRequester(ctx context.Context, name string) error {
	return ps.add(&NamedProc{Name: name, Kind: kindRequester, Scope: FixturesOf(ctx).Scope()})
}

// Started says whether a process of that name was started in this scenario.
func (ps *processState) Started(name string) bool {
	return slices.ContainsFunc(ps.all, func(p *NamedProc) bool { return p.Name == name })
}

// nextName is a generated name for an unnamed process of kind: "flownet-run-2".
func (ps *processState) nextName(prefix string) string {
	n := 1
	for _, p := range ps.all {
		if strings.HasPrefix(p.Name, prefix+"-") {
			n++
		}
	}
	return fmt.Sprintf("%s-%d", prefix, n)
}

// Resolve finds the process a feature text reference names.
func (ps *processState) Resolve(ref string) (*NamedProc, error) {
	switch ref {
	case "the FlowNet run":
		return ps.only(kindFlowNet, "", ref)
	case "the holder":
		return ps.only(KindKsqlFlow, "holder", ref)
	}
	name := strings.Trim(ref, `"`)
	for _, p := range ps.all {
		if p.Name == name && p.Kind == kindRequester {
			return nil, fmt.Errorf("%q is the requester's background cancel, not a process: wait for it with \"the requester's cancel was answered 200 or 409\"", name)
		}
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no process named %q was started (started: %s)", name, ps.names())
}

// only returns the one process of kind (and role) in play, or refuses.
func (ps *processState) only(kind, role, ref string) (*NamedProc, error) {
	var in []*NamedProc
	for _, p := range ps.all {
		if !p.retired && p.Kind == kind && (role == "" || p.Role == role) {
			in = append(in, p)
		}
	}
	switch len(in) {
	case 1:
		return in[0], nil
	case 0:
		return nil, fmt.Errorf("%q: no %s process was started", ref, kind)
	}
	var names []string
	for _, p := range in {
		names = append(names, fmt.Sprintf("%q", p.Name))
	}
	return nil, fmt.Errorf("%q is ambiguous: %d %s processes are in play (%s); name the one you mean", ref, len(in), kind, strings.Join(names, ", "))
}

// flownetRun resolves ref to a FlowNet process.
func (ps *processState) flownetRun(ref string) (*FlownetCall, error) {
	p, err := ps.Resolve(ref)
	if err != nil {
		return nil, err
	}
	if p.Flownet == nil {
		return nil, fmt.Errorf("%s is a %s process, not a FlowNet call", ref, p.Kind)
	}
	return p.Flownet, nil
}

// FinishedFlownetRun is the FlowNet call ref names, once it has ended: what a step reads of its
// exit code and output.
func (ps *processState) FinishedFlownetRun(ctx context.Context, ref string) (*FlownetCall, error) {
	c, err := ps.flownetRun(ref)
	if err != nil {
		return nil, err
	}
	if err := c.Finish(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// flownetCalls are the FlowNet calls in play, in start order.
func (ps *processState) flownetCalls() []*FlownetCall {
	var out []*FlownetCall
	for _, p := range ps.all {
		if p.Flownet != nil && !p.retired {
			out = append(out, p.Flownet)
		}
	}
	return out
}

// FlownetDone reports whether every FlowNet process in play has exited.
func (ps *processState) FlownetDone() bool {
	calls := ps.flownetCalls()
	for _, c := range calls {
		if _, done := c.proc.Exited(); !done {
			return false
		}
	}
	return len(calls) > 0
}

// retire takes every process out of play (its scope was replaced by a trial's).
func (ps *processState) retire() {
	for _, p := range ps.all {
		p.retired = true
	}
}

// runIDs are the run ids FlowNet reported for scope sc, for its cleanup.
func (ps *processState) runIDs(sc *scope.Scope) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps.all {
		if p.Flownet != nil && p.Scope == sc && p.Flownet.runID != "" && !seen[p.Flownet.runID] {
			seen[p.Flownet.runID] = true
			out = append(out, p.Flownet.runID)
		}
	}
	sort.Strings(out)
	return out
}

func (ps *processState) names() string {
	var out []string
	for _, p := range ps.all {
		out = append(out, fmt.Sprintf("%q", p.Name))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func (processDomain) noKsqlFlowProcessOfTheScope(ctx context.Context) error {
	sc := SceneOf(ctx)
	pids, err := proc.FindByArgv(ctx, ScopeProcessMatch(FixturesOf(ctx).Scope()))
	if err != nil {
		return err
	}
	return sc.St.On("process.ksql-flow.children").Equal("kSQL-Flow processes of this scope before the run", 0, len(pids))
}

func (processDomain) exitsWithCode(ctx context.Context, ref string, code int) error {
	sc := SceneOf(ctx)
	p, err := ProcessesOf(ctx).Resolve(ref)
	if err != nil {
		return err
	}
	res, err := WaitExit(ctx, p.Name, p.Proc)
	if err != nil {
		return err
	}
	if p.Flownet != nil {
		if err := p.Flownet.collect(); err != nil {
			return err
		}
	}
	subject := "process.exit-code"
	if p.Flownet != nil {
		subject = p.Flownet.ExitSubject()
	}
	if err := sc.St.On(subject).Equal("exit code of "+p.Name, code, res.ExitCode); err != nil {
		return fmt.Errorf("%w\nstdout: %s\nstderr: %s", err, p.Proc.StdoutTail(), p.Proc.StderrTail())
	}
	return nil
}

// ScopeProcessMatch matches kSQL-Flow processes of a scope: their argv carries a job id of
// the scope (every job id holds the scope hash).
func ScopeProcessMatch(sc *scope.Scope) proc.ArgvMatch {
	return proc.ArgvContains(scope.Prefix + sc.Hash8() + "_")
}

// WaitExit waits for a process to exit within the named process-exit limit (and the step's
// deadline), printing progress on long waits.
func WaitExit(ctx context.Context, name string, p *proc.Process) (proc.Result, error) {
	err := wait.For(ctx, wait.ProcessExit, name+" to exit", func(ctx context.Context) (bool, string, error) {
		if res, done := p.Exited(); done {
			return true, res.String(), nil
		}
		return false, "still running", nil
	})
	if err != nil {
		return proc.Result{}, err
	}
	res, _ := p.Exited()
	return res, nil
}

// StartChild starts one child in dir with an explicit environment, registers it under name
// in the process table and logs it.
func StartChild(ctx context.Context, np *NamedProc, spec proc.Spec) error {
	sc := SceneOf(ctx)
	if spec.Dir != "" {
		if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
			return err
		}
	}
	spec.LogDir = sc.St.WorkDir
	spec.Name = ProcFileName(np.Name)
	p, err := proc.Start(ctx, spec)
	if err != nil {
		return fmt.Errorf("start %s %q: %w", np.Kind, np.Name, err)
	}
	np.Proc = p
	for _, started := range sc.hooks.started { // the explore scheduler's watch (the proxy group)
		started(sc.St, np.Name, p.Done(), p.BusyProbe())
	}
	if np.Scope == nil {
		np.Scope = FixturesOf(ctx).Scope()
	}
	if err := ProcessesOf(ctx).add(np); err != nil {
		return err
	}
	fmt.Fprintf(sc.St.Log, "  started %s %q (pid %d)\n", np.Kind, np.Name, p.Pid())
	return nil
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// ProcFileName is a process name fit for log file names and the scenario record.
func ProcFileName(name string) string {
	return strings.Trim(unsafeNameChars.ReplaceAllString(name, "-"), "-")
}
