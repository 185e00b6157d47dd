package kit

import (
	"context"
	"encoding/json"
)

// printedRunJSON reads the one JSON line a `run-network --json` call printed (§1.3's table)
// against what it wrote: the outcome, the Run persisted for its key, the Run's last
// Invocation, the aggregate and the scheduler's code (the Invocation's result_code too),
// and no retry-braked or blocking ids.
func (runDomain) printedRunJSON(ctx context.Context, ref, outcome, aggregate, code string) error {
	sc := SceneOf(ctx)
	c, err := ProcessesOf(ctx).FinishedFlownetRun(ctx, ref)
	if err != nil {
		return err
	}
	if err := sc.St.On("output.run-network.json.outcome").Assert("one JSON line on the stdout of "+c.Name, "a JSON object", FirstLineOrNone(c.Stdout), c.JSON != nil); err != nil {
		return err
	}
	run, err := TheRun(ctx)
	if err != nil {
		return err
	}
	last, err := TheLastInvocation(ctx)
	if err != nil {
		return err
	}
	list := func(k string) string {
		b, _ := json.Marshal(c.JSON[k])
		return string(b)
	}
	field := func(k string) string { return OrNone(Str(c.JSON[k])) }
	for _, ch := range []struct{ subject, what, want, seen string }{
		{"output.run-network.json.outcome", "outcome", outcome, field("outcome")},
		{"output.run-network.json.run_id", "run_id against the run persisted for the business key", run.RunID, field("run_id")},
		{"output.run-network.json.invocation_id", "invocation_id against the run's last invocation", last.InvocationID, field("invocation_id")},
		{"output.run-network.json.aggregate_status", "aggregate_status", aggregate, field("aggregate_status")},
		{"output.run-network.json.invocation_result_code", "invocation_result_code", code, field("invocation_result_code")},
		{"output.run-network.json.invocation_result_code", "invocation_result_code against the last invocation's result_code", OrNone(last.ResultCode), field("invocation_result_code")},
		{"output.run-network.json.retry_brake_node_ids", "retry_brake_node_ids", "[]", list("retry_brake_node_ids")},
		{"output.run-network.json.blocked_run_ids", "blocked_run_ids", "[]", list("blocked_run_ids")},
	} {
		if err := sc.St.On(ch.subject).Equal(ch.what+" in the JSON line of "+c.Name, ch.want, ch.seen); err != nil {
			return err
		}
	}
	return nil
}
