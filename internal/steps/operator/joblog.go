package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/ksqlresult"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// jobLogDomain: what kSQL-Flow itself recorded — JOB log rows (read-only token; the harness
// never writes the JOB log) and the Execution Result files it left in FlowNet's
// KSQL_FLOW_WORKDIR.
type jobLogDomain struct{}

func (d jobLogDomain) register(reg stepdef.Registry) {
	reg.Step(`^the JOB log has exactly (\d+) rows correlated with the run$`, d.rowsCorrelatedWithTheRun)
	reg.Step(`^every attempt has exactly one JOB log row carrying its run, execution and job ids and status "([^"]+)"$`, d.everyAttemptHasItsRow)
	reg.Step(`^the attempts of consecutive nodes do not overlap in time$`, d.consecutiveAttemptsDoNotOverlap)
}

func (jobLogDomain) rowsCorrelatedWithTheRun(ctx context.Context, n int) error {
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return err
	}
	rows, err := kit.ReadExact(ctx, kit.SceneOf(ctx), target.RoleLog, kit.DecodeJobLogRow, kit.FieldIs("correlation_id", id))
	if err != nil {
		return err
	}
	return kit.SceneOf(ctx).St.Equal("JOB log rows with correlation_id = run_id", n, len(rows))
}

// everyAttemptHasItsRow reads each attempt's JOB log rows by attempt id and compares what the
// row carries with what FlowNet recorded and rendered: the run id FlowNet reported, the
// attempt's execution id, the node's job id.
func (jobLogDomain) everyAttemptHasItsRow(ctx context.Context, status string) error {
	sc := kit.SceneOf(ctx)
	fx := kit.FixturesOf(ctx)
	runID, err := kit.CurrentRunID(ctx)
	if err != nil {
		return err
	}
	atts, err := kit.RunAttempts(ctx)
	if err != nil {
		return err
	}
	if err := sc.St.Assert("attempts of the run", ">= 1", len(atts), len(atts) >= 1); err != nil {
		return err
	}
	jobIDs := map[string]string{}
	if n, err := fx.Rendered(); err == nil {
		for _, node := range n.Nodes {
			jobIDs[node.ID] = node.JobID
		}
	}
	for _, a := range atts {
		node := fx.FixtureName(a.NodeID)
		rows, err := kit.ReadExact(ctx, sc, target.RoleLog, kit.DecodeJobLogRow, kit.FieldIs("attempt_id", a.NodeAttemptID))
		if err != nil {
			return err
		}
		if err := sc.St.Equal("JOB log rows for the attempt of "+node, 1, len(rows)); err != nil {
			return err
		}
		row := rows[0]
		checks := []struct{ field, want, seen string }{
			{"correlation_id", runID, row.CorrelationID},
			{"execution_id", kit.OrNone(a.ExecutionID), kit.OrNone(row.ExecutionID)},
			{"job_id", kit.OrNone(jobIDs[a.NodeID]), kit.OrNone(row.JobID)},
			{"status", status, row.Status},
		}
		for _, c := range checks {
			if err := sc.St.Equal(fmt.Sprintf("JOB log %s for %s", c.field, node), c.want, c.seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// consecutiveAttemptsDoNotOverlap compares, for each pair of consecutive nodes of the
// fixture, the first node's finishedAt with the next node's startedAt, in milliseconds.
func (jobLogDomain) consecutiveAttemptsDoNotOverlap(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	n, err := kit.FixturesOf(ctx).Rendered()
	if err != nil {
		return err
	}
	// Every file must read: a result the comparison cannot see would let an overlap pass.
	results, err := ksqlresult.Read(sc.KsqlWorkDir)
	if err != nil {
		return fmt.Errorf("execution results of the scenario: %w", err)
	}
	var prevEnd time.Time
	prevNode := ""
	for _, node := range n.Nodes {
		atts, err := kit.AttemptsOf(ctx, node.ID)
		if err != nil {
			return err
		}
		if err := sc.St.Assert("attempts of node "+node.FixtureID, ">= 1", len(atts), len(atts) >= 1); err != nil {
			return err
		}
		res, ok := results[atts[0].NodeAttemptID]
		if err := sc.St.Assert("execution result of the first attempt of "+node.FixtureID, "present", kit.Presence(ok), ok); err != nil {
			return err
		}
		start, end, err := res.Times()
		if err != nil {
			return fmt.Errorf("execution result times of %s unreadable: %w", node.FixtureID, err)
		}
		if start.IsZero() {
			return fmt.Errorf("execution result of %s has no startedAt: kSQL-Flow did not start executing", node.FixtureID)
		}
		if prevNode != "" {
			what := fmt.Sprintf("%s finishedAt <= %s startedAt (ms)", prevNode, node.FixtureID)
			seen := fmt.Sprintf("%s vs %s", prevEnd.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano))
			if err := sc.St.Assert(what, "finishedAt <= startedAt", seen, !prevEnd.After(start)); err != nil {
				return err
			}
		}
		prevEnd, prevNode = end, node.FixtureID
	}
	return nil
}
