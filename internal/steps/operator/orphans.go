package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// orphanDomain: killing a FlowNet process while its node runs — the whole tree, deepest
// first (FlowNet and its kSQL-Flow child die together, the attempt is left RUNNING for a
// later resume to adjudicate), or the FlowNet parent alone, so its kSQL-Flow child finishes
// as an orphan. Each kill is confirmed from the process table, not assumed.
type orphanDomain struct{}

func (d orphanDomain) register(reg stepdef.Registry) {
	reg.Step(`^the whole process tree of "([^"]+)" is killed, deepest first$`, d.treeIsKilled)
	reg.Step(`^only the FlowNet process of "([^"]+)" is killed, leaving its kSQL-Flow child running$`, d.parentIsKilled)
	reg.Step(`^the orphaned kSQL-Flow child of "([^"]+)" finishes and its JOB log row is "([^"]+)"$`, d.orphanFinishes)
	reg.Step(`^the orphaned kSQL-Flow child of "([^"]+)" finishes and its JOB log row has a terminal status$`, d.orphanFinishesTerminal)
	reg.Step(`^the latest attempt of node "([^"]+)" is "([^"]+)" with result code "([^"]+)" and the start time it had when FlowNet was killed$`, d.attemptKeptItsStart)
	reg.Step(`^the kSQL-Flow child of that attempt finishes on its own and its JOB log row is "([^"]+)"$`, d.childFinishesCutOff)
	reg.Step(`^the kSQL-Flow child of that attempt finishes on its own and its JOB log row has a terminal status$`, d.childFinishesCutOffTerminal)
}

// orphanState is what each kill left behind, in kill order.
type orphanState struct {
	kills []*flownetKill
}

// kill finds the kill of the FlowNet process named name.
func (s *orphanState) kill(name string) *flownetKill {
	for _, k := range s.kills {
		if k.flownet == name {
			return k
		}
	}
	return nil
}

// flownetKill is one kill of a FlowNet process during a node's attempt.
type flownetKill struct {
	flownet  string          // the killed FlowNet process's name
	node     string          // fixture node whose attempt was RUNNING
	attempt  kit.NodeAttempt // that attempt, read right before the kill
	children []int32         // the attempt's kSQL-Flow processes at the kill
}

var orphanKey = scenario.NewKey[orphanState]("orphans")

// prepareKill resolves the FlowNet process, re-reads the RUNNING attempt the kill domain
// found and lists the attempt's kSQL-Flow processes.
func prepareKill(ctx context.Context, ref string) (*kit.NamedProc, *flownetKill, error) {
	p, err := kit.ProcessesOf(ctx).Resolve(`"` + ref + `"`)
	if err != nil {
		return nil, nil, err
	}
	if p.Flownet == nil {
		return nil, nil, fmt.Errorf("%q is a %s process, not FlowNet", ref, p.Kind)
	}
	node, seen, err := killKey.Of(kit.SceneOf(ctx).St).runningAttempt()
	if err != nil {
		return nil, nil, err
	}
	atts, err := kit.AttemptsOf(ctx, seen.NodeID)
	if err != nil {
		return nil, nil, err
	}
	k := &flownetKill{node: node}
	for _, a := range atts {
		if a.NodeAttemptID == seen.NodeAttemptID {
			k.attempt = a
		}
	}
	if k.attempt.NodeAttemptID == "" {
		return nil, nil, fmt.Errorf("attempt %s of %s vanished before the kill", seen.NodeAttemptID, node)
	}
	k.children, err = proc.FindByArgv(ctx, attemptProcessMatch(ctx, k.attempt.NodeAttemptID))
	if err != nil {
		return nil, nil, err
	}
	return p, k, kit.SceneOf(ctx).St.On("process.ksql-flow.children").Assert("kSQL-Flow processes of attempt "+k.attempt.NodeAttemptID+" before the kill", ">= 1",
		pidList(k.children), len(k.children) >= 1)
}

// attemptProcessMatch matches the kSQL-Flow processes of one attempt of this scope.
func attemptProcessMatch(ctx context.Context, attemptID string) proc.ArgvMatch {
	return proc.AllOf(proc.ArgvHasSeq("--attempt-id", attemptID), kit.ScopeProcessMatch(kit.FixturesOf(ctx).Scope()))
}

func (k *flownetKill) remember(ctx context.Context, name string) {
	k.flownet = name
	st := orphanKey.Of(kit.SceneOf(ctx).St)
	st.kills = append(st.kills, k)
}

// alive lists which of pids are still live processes.
func alive(ctx context.Context, pids []int32) []int32 {
	var out []int32
	for _, pid := range pids {
		if proc.PidAlive(ctx, pid) {
			out = append(out, pid)
		}
	}
	return out
}

func pidList(pids []int32) string {
	if len(pids) == 0 {
		return "none"
	}
	parts := make([]string, len(pids))
	for i, p := range pids {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ",")
}

// endedAbnormally asserts how a killed FlowNet ended: by a signal on Unix, by a non-zero
// exit on Windows (where a killed process has no signal).
func endedAbnormally(ctx context.Context, p *kit.NamedProc) error {
	res, err := kit.WaitExit(ctx, p.Name, p.Proc)
	if err != nil {
		return err
	}
	return kit.SceneOf(ctx).St.On("process.flownet.end").Assert("end of "+p.Name+" after the kill", "abnormal (a signal, or a non-zero exit on Windows)", res.String(), res.Abnormal())
}

// treeIsKilled kills FlowNet and every descendant, deepest first (proc.Process.KillTree),
// then reads the process table: FlowNet and the attempt's kSQL-Flow processes must be gone.
func (orphanDomain) treeIsKilled(ctx context.Context, ref string) error {
	sc := kit.SceneOf(ctx)
	p, k, err := prepareKill(ctx, ref)
	if err != nil {
		return err
	}
	killed, err := p.Proc.KillTree()
	if err != nil {
		return err
	}
	k.remember(ctx, p.Name)
	killKey.Of(sc.St).childKilled(sc, kit.FixturesOf(ctx))
	if err := endedAbnormally(ctx, p); err != nil {
		return err
	}
	var missed []int32
	for _, c := range k.children {
		if !slices.Contains(killed, c) {
			missed = append(missed, c)
		}
	}
	sc.St.Note("killed the tree of "+p.Name, fmt.Sprintf("pids %s (FlowNet %d, kSQL-Flow %s)", pidList(killed), p.Proc.Pid(), pidList(k.children)))
	if err := sc.St.On("process.ksql-flow.children").Equal("kSQL-Flow processes of attempt "+k.attempt.NodeAttemptID+" the tree kill missed", "none", pidList(missed)); err != nil {
		return err
	}
	all := append([]int32{int32(p.Proc.Pid())}, killed...)
	return sc.St.On("process.ksql-flow.children").Equal("processes of the tree of "+p.Name+" still in the process table", "none", pidList(alive(ctx, all)))
}

// parentIsKilled kills the FlowNet process alone: its kSQL-Flow child must live on.
func (orphanDomain) parentIsKilled(ctx context.Context, ref string) error {
	sc := kit.SceneOf(ctx)
	p, k, err := prepareKill(ctx, ref)
	if err != nil {
		return err
	}
	if err := p.Proc.Kill(); err != nil {
		return err
	}
	k.remember(ctx, p.Name)
	if err := endedAbnormally(ctx, p); err != nil {
		return err
	}
	if err := sc.St.On("process.flownet.end").Equal("FlowNet process "+p.Name+" in the process table after the kill", "none", pidList(alive(ctx, []int32{int32(p.Proc.Pid())}))); err != nil {
		return err
	}
	return sc.St.On("process.ksql-flow.children").Equal("kSQL-Flow processes of attempt "+k.attempt.NodeAttemptID+" alive after their parent was killed",
		pidList(k.children), pidList(alive(ctx, k.children)))
}

// orphanFinishes waits until the orphaned kSQL-Flow of a killed FlowNet has left the process
// table and its JOB log row is terminal, then compares the row's status.
func (orphanDomain) orphanFinishes(ctx context.Context, ref, status string) error {
	sc := kit.SceneOf(ctx)
	k := orphanKey.Of(sc.St).kill(ref)
	if k == nil {
		return fmt.Errorf("%q was not killed first (missing: only the FlowNet process of %q is killed …)", ref, ref)
	}
	id := k.attempt.NodeAttemptID
	var row kit.JobLogRow
	var left []int32
	err := wait.For(ctx, wait.ProcessExit, "the orphaned kSQL-Flow of attempt "+id+" to finish", func(ctx context.Context) (bool, string, error) {
		left = alive(ctx, k.children)
		rows, err := kit.ReadExact(ctx, sc, target.RoleLog, kit.DecodeJobLogRow, kit.FieldIs("attempt_id", id))
		if err != nil {
			return false, "", err
		}
		if len(rows) != 1 {
			return false, fmt.Sprintf("%d JOB log rows, processes alive: %s", len(rows), pidList(left)), nil
		}
		row = rows[0]
		return len(left) == 0 && row.Status != "RUNNING" && row.Status != "", fmt.Sprintf("JOB log %s, processes alive: %s", row.Status, pidList(left)), nil
	})
	if err != nil {
		return err
	}
	if err := sc.St.On("process.ksql-flow.children").Equal("kSQL-Flow processes of attempt "+id+" in the process table", "none", pidList(left)); err != nil {
		return err
	}
	return jobLogStatusIs(sc, "JOB log status of the orphaned attempt of "+k.node, status, row.Status)
}

// orphanFinishesTerminal is orphanFinishes accepting any terminal status, as the original did
// where the orphan's end is not what the scenario proves (scenarios.md §2.2.5, §2.4.3).
func (d orphanDomain) orphanFinishesTerminal(ctx context.Context, ref string) error {
	return d.orphanFinishes(ctx, ref, anyTerminal)
}

// anyTerminal, as the status a step expects, accepts any terminal JOB log status.
const anyTerminal = ""

// terminalJobStatuses are the ends the original accepted for a child left to finish.
var terminalJobStatuses = []string{"SUCCESS", "FAILED", "ABORTED", "CANCELLED"}

// jobLogStatusIs compares a JOB log row's status with want, or, for anyTerminal, requires one
// of terminalJobStatuses.
func jobLogStatusIs(sc *kit.Scene, what, want, seen string) error {
	if want != anyTerminal {
		return sc.St.On("joblog.status").Equal(what, want, seen)
	}
	return sc.St.On("joblog.status").Assert(what, "terminal ("+strings.Join(terminalJobStatuses, ", ")+")", seen, slices.Contains(terminalJobStatuses, seen))
}

// attemptKeptItsStart: the attempt that was RUNNING when FlowNet was killed has been settled
// by a later resume, and it is still that attempt, with the start time it had then.
func (orphanDomain) attemptKeptItsStart(ctx context.Context, name, status, code string) error {
	sc := kit.SceneOf(ctx)
	var k *flownetKill
	for _, kill := range orphanKey.Of(sc.St).kills {
		if kill.node == name {
			k = kill // the latest kill during that node
		}
	}
	if k == nil {
		return fmt.Errorf("no FlowNet was killed while node %q ran", name)
	}
	a, err := kit.RecordDomain{}.LatestAttempt(ctx, name, status, code)
	if err != nil {
		return err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.node_attempt_id").Equal("latest attempt of "+name+" against the one RUNNING at the kill", k.attempt.NodeAttemptID, a.NodeAttemptID); err != nil {
		return err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.execution_started_at").Assert("execution_started_at of the attempt of "+name+" at the kill", "non-empty", kit.OrNone(k.attempt.ExecutionStartedAt), k.attempt.ExecutionStartedAt != ""); err != nil {
		return err
	}
	return sc.St.On("audit.NODE_ATTEMPT.execution_started_at").Equal("execution_started_at of the latest attempt of "+name+" against its value at the kill", k.attempt.ExecutionStartedAt, kit.OrNone(a.ExecutionStartedAt))
}

// childFinishesCutOff waits (bounded) for the JOB log row of the attempt the last "has a
// RUNNING attempt" step found to leave RUNNING: kSQL-Flow's traffic does not pass FlowNet's
// proxy (at most the scope's kSQL-Flow proxy, proxy/windows.go), so an outage of FlowNet's traffic
// must not touch it. The harness reads the JOB log directly.
func (orphanDomain) childFinishesCutOff(ctx context.Context, status string) error {
	sc := kit.SceneOf(ctx)
	node, att, err := killKey.Of(sc.St).runningAttempt()
	if err != nil {
		return err
	}
	var row kit.JobLogRow
	err = wait.For(ctx, wait.JobLogTerminal, "the JOB log row of attempt "+att.NodeAttemptID+" to leave RUNNING", func(ctx context.Context) (bool, string, error) {
		rows, err := kit.ReadExact(ctx, sc, target.RoleLog, kit.DecodeJobLogRow, kit.FieldIs("attempt_id", att.NodeAttemptID))
		if err != nil {
			return false, "", err
		}
		if len(rows) != 1 {
			return false, fmt.Sprintf("%d JOB log rows", len(rows)), nil
		}
		row = rows[0]
		return row.Status != "RUNNING" && row.Status != "", "JOB log " + kit.OrNone(row.Status), nil
	})
	if err != nil {
		return err
	}
	return jobLogStatusIs(sc, "JOB log status of the attempt of "+node+" while FlowNet was cut off", status, row.Status)
}

// childFinishesCutOffTerminal is childFinishesCutOff accepting any terminal status (the
// original's acceptance where the child's own end is not what the scenario proves).
func (d orphanDomain) childFinishesCutOffTerminal(ctx context.Context) error {
	return d.childFinishesCutOff(ctx, anyTerminal)
}
