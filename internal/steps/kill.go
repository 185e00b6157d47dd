package steps

import (
	"context"
	"fmt"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
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
	attempt *nodeAttempt
	row     jobLogRow // the attempt's JOB log row when it was seen RUNNING
	killed  bool
}

var killKey = scenario.NewKey[killState]("kill")

// runningAttempt is the attempt the last "has a RUNNING attempt" step found, and its node.
func (ks *killState) runningAttempt() (string, nodeAttempt, error) {
	if ks.attempt == nil {
		return "", nodeAttempt{}, fmt.Errorf("no RUNNING attempt was found first (missing: node … has a RUNNING attempt with its JOB log start marker)")
	}
	return ks.node, *ks.attempt, nil
}

// killedRow is the JOB log row of node's attempt whose child was killed.
func (ks *killState) killedRow(node string) (jobLogRow, error) {
	if !ks.killed || ks.node != node {
		return jobLogRow{}, fmt.Errorf("node %q had no killed attempt (kill a RUNNING attempt of it first)", node)
	}
	return ks.row, nil
}

// childKilled records that the kSQL-Flow child of the RUNNING attempt was killed (alone, or
// with its FlowNet tree): its job lock stays held, so the scenario's cleanup recovers it
// unless a step did.
func (ks *killState) childKilled(sc *scene, fx *fixtureState) {
	ks.killed = true
	node := ks.node
	// The cleanup runs outside the scenario's context: it gets what it needs now.
	sc.st.Defer("recover the job lock of "+node+" if the scenario did not", func(ctx context.Context) error {
		if jobLockKey.Of(sc.st).recovered() {
			return nil
		}
		_, err := recoverJobLock(ctx, sc, fx, node)
		return err
	})
}

func (killDomain) hasARunningAttempt(ctx context.Context, name string) error {
	sc := sceneOf(ctx)
	node, err := fixturesOf(ctx).node(name)
	if err != nil {
		return err
	}
	var attempt nodeAttempt
	var row jobLogRow
	err = wait.For(ctx, wait.RunningAttempt, "a RUNNING attempt of "+name+" with its JOB log start marker",
		func(ctx context.Context) (bool, string, error) {
			atts, err := attemptsOf(ctx, node.ID)
			if err != nil {
				return false, "no run yet: " + err.Error(), nil
			}
			var running *nodeAttempt
			for i := range atts {
				if atts[i].Status == "RUNNING" {
					running = &atts[i]
				}
			}
			if running == nil {
				if len(atts) > 0 {
					last := atts[len(atts)-1]
					if procs := processesOf(ctx); procs.flownetDone() {
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
			rows, err := readExact(ctx, sc, target.RoleLog, decodeJobLogRow, match{"attempt_id", running.NodeAttemptID})
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
	ks := killKey.Of(sc.st)
	ks.node, ks.attempt, ks.row = name, &attempt, row
	if err := sc.st.Equal("status of the running attempt of "+name, "RUNNING", attempt.Status); err != nil {
		return err
	}
	return sc.st.Assert("JOB log start marker of the running attempt of "+name, "non-empty", orNone(row.RunnerExecutionStartedAt), row.RunnerExecutionStartedAt != "")
}

// theChildIsKilled kills exactly the kSQL-Flow process tree started for the RUNNING
// attempt, found by its command line (`--attempt-id <id>` and the scope).
func (killDomain) theChildIsKilled(ctx context.Context) error {
	sc := sceneOf(ctx)
	ks := killKey.Of(sc.st)
	if ks.attempt == nil {
		return fmt.Errorf("no RUNNING attempt was found first")
	}
	attemptID := ks.attempt.NodeAttemptID
	match := proc.AllOf(proc.ArgvHasSeq("--attempt-id", attemptID), scopeProcessMatch(fixturesOf(ctx).scope()))
	tree, killed, err := proc.KillOneTree(ctx, "kSQL-Flow child of attempt "+attemptID, match)
	if err != nil {
		return err
	}
	ks.childKilled(sc, fixturesOf(ctx))
	return sc.st.Assert("processes killed in the kSQL-Flow tree of attempt "+attemptID, ">= 1",
		fmt.Sprintf("%d (root pid %d)", len(killed), tree.Root), len(killed) >= 1)
}
