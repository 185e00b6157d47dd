package operator

import (
	"context"
	"fmt"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// killDomain: a node's RUNNING attempt and the kill of exactly its kSQL-Flow child.
type killDomain struct{}

func (d killDomain) register(reg stepdef.Registry) {
	reg.Step(`^node "([^"]+)" has a RUNNING attempt with its JOB log start marker$`, d.hasARunningAttempt)
	reg.Step(`^the kSQL-Flow child of that attempt is killed$`, d.theChildIsKilled)
}

// killState is the attempt found RUNNING, its JOB log row, and whether its child was killed.
type killState struct {
	node    string // fixture node id
	attempt *kit.NodeAttempt
	row     kit.JobLogRow // the attempt's JOB log row when it was seen RUNNING
	killed  bool
}

var killKey = scenario.NewKey[killState]("kill")

// runningAttempt is the attempt the last "has a RUNNING attempt" step found, and its node.
func (ks *killState) runningAttempt() (string, kit.NodeAttempt, error) {
	if ks.attempt == nil {
		return "", kit.NodeAttempt{}, fmt.Errorf("no RUNNING attempt was found first (missing: node … has a RUNNING attempt with its JOB log start marker)")
	}
	return ks.node, *ks.attempt, nil
}

// killedRow is the JOB log row of node's attempt whose child was killed.
func (ks *killState) killedRow(node string) (kit.JobLogRow, error) {
	if !ks.killed || ks.node != node {
		return kit.JobLogRow{}, fmt.Errorf("node %q had no killed attempt (kill a RUNNING attempt of it first)", node)
	}
	return ks.row, nil
}

// childKilled records that the kSQL-Flow child of the RUNNING attempt was killed (alone, or
// with its FlowNet tree): its job lock stays held, so the scenario's cleanup recovers it
// unless a step did.
func (ks *killState) childKilled(sc *kit.Scene, fx *kit.FixtureState) {
	ks.killed = true
	node := ks.node
	// The cleanup runs outside the scenario's context: it gets what it needs now.
	sc.St.Defer("recover the job lock of "+node+" if the scenario did not", func(ctx context.Context) error {
		if jobLockKey.Of(sc.St).recovered() {
			return nil
		}
		_, err := recoverJobLock(ctx, sc, fx, node)
		return err
	})
}

func (killDomain) hasARunningAttempt(ctx context.Context, name string) error {
	sc := kit.SceneOf(ctx)
	node, err := kit.FixturesOf(ctx).Node(name)
	if err != nil {
		return err
	}
	var attempt kit.NodeAttempt
	var row kit.JobLogRow
	err = wait.For(ctx, wait.RunningAttempt, "a RUNNING attempt of "+name+" with its JOB log start marker",
		func(ctx context.Context) (bool, string, error) {
			atts, err := kit.AttemptsOf(ctx, node.ID)
			if err != nil {
				return false, "no run yet: " + err.Error(), nil
			}
			var running *kit.NodeAttempt
			for i := range atts {
				if atts[i].Status == "RUNNING" {
					running = &atts[i]
				}
			}
			if running == nil {
				if len(atts) > 0 {
					last := atts[len(atts)-1]
					if procs := kit.ProcessesOf(ctx); procs.FlownetDone() {
						return false, "", wait.Permanent(fmt.Errorf("FlowNet has exited and the last attempt of %s is %s/%s", name, last.Status, last.ResultCode))
					}
					// A run-network process never starts a node again once it succeeded: the
					// attempt this step waits for has come and gone (hold it with a barrier).
					if last.Status == "SUCCESS" {
						return false, "", wait.Permanent(fmt.Errorf("the attempt of %s already finished %s/%s before it was seen RUNNING with its start marker", name, last.Status, last.ResultCode))
					}
				}
				return false, fmt.Sprintf("%d attempts, none RUNNING", len(atts)), nil
			}
			rows, err := kit.ReadExact(ctx, sc, target.RoleLog, kit.DecodeJobLogRow, kit.FieldIs("attempt_id", running.NodeAttemptID))
			if err != nil {
				return false, "", err
			}
			for _, r := range rows {
				if r.Status == "RUNNING" && r.RunnerExecutionStartedAt != "" {
					attempt, row = *running, r
					return true, "JOB log RUNNING with start marker", nil
				}
			}
			return false, fmt.Sprintf("attempt %s RUNNING, %d JOB log rows, none RUNNING with a start marker", running.NodeAttemptID, len(rows)), nil
		})
	if err != nil {
		return err
	}
	ks := killKey.Of(sc.St)
	ks.node, ks.attempt, ks.row = name, &attempt, row
	if err := sc.St.On("audit.NODE_ATTEMPT.status").Equal("status of the running attempt of "+name, "RUNNING", attempt.Status); err != nil {
		return err
	}
	return sc.St.On("joblog.runner_execution_started_at").Assert("JOB log start marker of the running attempt of "+name, "non-empty", kit.OrNone(row.RunnerExecutionStartedAt), row.RunnerExecutionStartedAt != "")
}

// theChildIsKilled kills exactly the kSQL-Flow process tree started for the RUNNING
// attempt, found by its command line (`--attempt-id <id>` and the scope).
func (killDomain) theChildIsKilled(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	ks := killKey.Of(sc.St)
	if ks.attempt == nil {
		return fmt.Errorf("no RUNNING attempt was found first")
	}
	attemptID := ks.attempt.NodeAttemptID
	match := proc.AllOf(proc.ArgvHasSeq("--attempt-id", attemptID), kit.ScopeProcessMatch(kit.FixturesOf(ctx).Scope()))
	tree, killed, err := proc.KillOneTree(ctx, "kSQL-Flow child of attempt "+attemptID, match)
	if err != nil {
		return err
	}
	ks.childKilled(sc, kit.FixturesOf(ctx))
	return sc.St.On("process.ksql-flow.children").Assert("processes killed in the kSQL-Flow tree of attempt "+attemptID, ">= 1",
		fmt.Sprintf("%d (root pid %d)", len(killed), tree.Root), len(killed) >= 1)
}
