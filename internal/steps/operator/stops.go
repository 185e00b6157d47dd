package operator

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/wait"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// stopDomain: a graceful stop of a FlowNet run mid-node by the platform's stop signal
// (m7-04). On Windows that is CTRL_BREAK to the process's console group (the SIGBREAK
// Node reports; the original scenario was Windows-only); elsewhere SIGTERM to the FlowNet
// process alone. The record says which signal was sent and whether FlowNet drained (its
// attempt and invocation closed) or simply terminated; either way the graph it left must
// be safe, and what it left RUNNING is recovered by the operator steps.
type stopDomain struct{}

func (d stopDomain) register(reg stepdef.Registry) {
	reg.Step(`^the platform's stop signal is sent to "([^"]+)"$`, d.sendStopSignal)
	reg.Step(`^"([^"]+)" ends within (\d+) s of the stop signal, drained or terminated$`, d.endsAfterStop)
	reg.Step(`^the graph of the run is safe: statuses in their allowed sets, finished_at on every terminal record, no RUNNING node under a terminal run, no RUNNING attempt under a finished invocation$`, d.graphIsSafe)
	reg.Step(`^no attempt or invocation of the run is RUNNING$`, d.nothingRunning)
}

// stopState: when the stop signal went to which process.
type stopState struct {
	process string
	signal  string
	at      time.Time
}

var stopKey = scenario.NewKey[stopState]("stops")

// stopSignalName is what proc.Terminate sends on this platform.
func stopSignalName() string {
	if runtime.GOOS == "windows" {
		return "CTRL_BREAK (SIGBREAK)"
	}
	return "SIGTERM"
}

func (stopDomain) sendStopSignal(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	p, err := kit.ProcessesOf(ctx).Resolve(`"` + name + `"`)
	if err != nil {
		return err
	}
	if p.Flownet == nil {
		return fmt.Errorf("%q is a %s process, not FlowNet", name, p.Kind)
	}
	ss := stopKey.Of(sc.St)
	ss.process, ss.signal, ss.at = name, stopSignalName(), time.Now()
	if err := p.Proc.Signal(proc.Terminate); err != nil {
		return err
	}
	sc.St.Note("stop signal", fmt.Sprintf("%s sent to %s (pid %d) on %s", ss.signal, name, p.Proc.Pid(), runtime.GOOS))
	return nil
}

// endsAfterStop waits for the stopped process to end, bounded by the scenario's limit (the
// original waited 60 s), and notes how: graceful-drain when the attempt that was RUNNING
// and the last invocation are no longer RUNNING, simple-termination otherwise.
func (stopDomain) endsAfterStop(ctx context.Context, name string, limit int) error {
	sc := kit.SceneOf(ctx)
	ss := stopKey.Of(sc.St)
	if ss.process != name {
		return fmt.Errorf("no stop signal was sent to %q first", name)
	}
	p, err := kit.ProcessesOf(ctx).Resolve(`"` + name + `"`)
	if err != nil {
		return err
	}
	var res proc.Result
	err = wait.For(ctx, wait.ProcessExit, name+" to end after "+ss.signal, func(context.Context) (bool, string, error) {
		r, done := p.Proc.Exited()
		res = r
		return done, "still running", nil
	})
	if err != nil {
		return err
	}
	took := time.Since(ss.at)
	if p.Flownet != nil {
		_ = p.Flownet.Finish(ctx)
	}
	_, att, err := killKey.Of(sc.St).runningAttempt()
	if err != nil {
		return err
	}
	atts, invs, err := attemptsAndInvocations(ctx)
	if err != nil {
		return err
	}
	attStatus := "(gone)"
	for _, a := range atts {
		if a.NodeAttemptID == att.NodeAttemptID {
			attStatus = a.Status
		}
	}
	invStatus := "(none)"
	if len(invs) > 0 {
		invStatus = invs[len(invs)-1].Status
	}
	observation := "simple-termination"
	if attStatus != "RUNNING" && invStatus != "RUNNING" {
		observation = "graceful-drain"
	}
	ended := fmt.Sprintf("exit code %d", res.ExitCode)
	if res.Signal != "" {
		ended = "signal " + res.Signal
	}
	sc.St.Note("stop observation", fmt.Sprintf("%s: %s sent, %s after %s; attempt %s, last invocation %s",
		observation, ss.signal, ended, took.Round(time.Millisecond), attStatus, invStatus))
	return sc.St.On("process.flownet.end").Assert(fmt.Sprintf("seconds from %s to the end of %s", ss.signal, name), fmt.Sprintf("at most %d", limit),
		took.Round(time.Millisecond).String(), took <= time.Duration(limit)*time.Second)
}

var (
	runStatuses        = []string{"CREATED", "RUNNING", "SUCCESS", "FAILED", "CANCELLED", "UNKNOWN"}
	nodeStatuses       = []string{"WAITING", "RUNNING", "SUCCESS", "FAILED", "BLOCKED", "CANCELLED", "UNKNOWN"}
	attemptStatuses    = []string{"RUNNING", "SUCCESS", "FAILED", "CANCELLED", "UNKNOWN"}
	invocationStatuses = []string{"RUNNING", "SUCCESS", "FAILED", "CANCELLED", "UNKNOWN"}
	terminalStatuses   = []string{"SUCCESS", "FAILED", "CANCELLED", "UNKNOWN"}
)

func isOneOf(s string, set []string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// graphIsSafe checks the records of the run (the original's "safe graph"): every status in
// its allowed set (product-contract §3), every terminal run, node state, attempt and
// invocation carries finished_at, a terminal run has no RUNNING node state, and a finished
// invocation owns no RUNNING attempt (an invocation closes after its attempts; one a stop
// left RUNNING belongs to a RUNNING invocation for orphan adjudication, §1.3.2).
func (stopDomain) graphIsSafe(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	run, err := kit.TheRun(ctx)
	if err != nil {
		return err
	}
	states, err := kit.NodeStates(ctx)
	if err != nil {
		return err
	}
	atts, invs, err := attemptsAndInvocations(ctx)
	if err != nil {
		return err
	}
	fx := kit.FixturesOf(ctx)
	n, err := fx.Rendered()
	if err != nil {
		return err
	}
	var bad []string
	check := func(what, status, finishedAt string, allowed []string) {
		if !isOneOf(status, allowed) {
			bad = append(bad, fmt.Sprintf("%s status %q outside %s", what, status, strings.Join(allowed, "|")))
		}
		if isOneOf(status, terminalStatuses) && finishedAt == "" {
			bad = append(bad, what+" "+status+" without finished_at")
		}
	}
	check("run", run.Status, run.FinishedAt, runStatuses)
	for _, node := range n.Nodes {
		ns, ok := states[node.ID]
		if !ok {
			continue
		}
		check("node "+node.FixtureID, ns.Status, ns.FinishedAt, nodeStatuses)
		if isOneOf(run.Status, terminalStatuses) && ns.Status == "RUNNING" {
			bad = append(bad, fmt.Sprintf("node %s RUNNING under a %s run", node.FixtureID, run.Status))
		}
	}
	for _, a := range atts {
		check(fmt.Sprintf("attempt %d of %s", a.AttemptNo, fx.FixtureName(a.NodeID)), a.Status, a.FinishedAt, attemptStatuses)
	}
	owner := map[string]int{} // invocation id -> index in invs
	for i, inv := range invs {
		check(fmt.Sprintf("invocation %d", i+1), inv.Status, inv.FinishedAt, invocationStatuses)
		owner[inv.InvocationID] = i
	}
	for _, a := range atts {
		if i, ok := owner[a.InvocationID]; ok && a.Status == "RUNNING" && isOneOf(invs[i].Status, terminalStatuses) {
			bad = append(bad, fmt.Sprintf("attempt %d of %s RUNNING under a %s invocation %d",
				a.AttemptNo, fx.FixtureName(a.NodeID), invs[i].Status, i+1))
		}
	}
	sc.St.Note("graph of the run", fmt.Sprintf("run %s, %d node states, %d attempts, %d invocations", run.Status, len(states), len(atts), len(invs)))
	return sc.St.On("state.NODE_STATE.status", "audit.NODE_ATTEMPT.status").Equal("unsafe records of the run", "(none)", kit.OrNone(strings.Join(bad, "; ")))
}

func (stopDomain) nothingRunning(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	atts, invs, err := attemptsAndInvocations(ctx)
	if err != nil {
		return err
	}
	var running []string
	for _, a := range atts {
		if a.Status == "RUNNING" {
			running = append(running, fmt.Sprintf("attempt %d of %s", a.AttemptNo, kit.FixturesOf(ctx).FixtureName(a.NodeID)))
		}
	}
	for i, inv := range invs {
		if inv.Status == "RUNNING" {
			running = append(running, fmt.Sprintf("invocation %d", i+1))
		}
	}
	return sc.St.On("audit.NODE_ATTEMPT.status", "audit.RUN_INVOCATION.status").Equal("RUNNING attempts and invocations of the run", "(none)", kit.OrNone(strings.Join(running, ", ")))
}

// attemptsAndInvocations reads the run's attempts, then its invocations: the two sides of the
// invocation-owns-attempts checks.
func attemptsAndInvocations(ctx context.Context) ([]kit.NodeAttempt, []kit.RunInvocation, error) {
	atts, err := kit.RunAttempts(ctx)
	if err != nil {
		return nil, nil, err
	}
	invs, err := kit.Invocations(ctx)
	return atts, invs, err
}
