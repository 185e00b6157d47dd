package kintoneguard

import (
	"context"
	"fmt"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// attemptFields are the NODE_ATTEMPT fields ScopeAttempts reads; node_attempt_id is the
// attempt id kSQL-Flow's Execution Result file of the attempt echoes.
var attemptFields = []string{"run_id", "node_id", "node_attempt_id", "attempt_no", "status", "result_code", "invocation_id",
	"execution_started_at", "started_at", "finished_at", "duration_sec"}

// ScopeAttempts reads (never writes) the NODE_ATTEMPT records of the scope's runs, found the
// way the sweep finds them (NETWORK_RUN records whose business key or network id carries the
// scope). The runner reads them before the cleanup deletes them, for the scenario's timeline.
func (c *Client) ScopeAttempts(ctx context.Context) ([]kintoneapi.Record, error) {
	ix, err := c.loadScopeRuns(ctx)
	if err != nil {
		return nil, fmt.Errorf("attempts of scope %s: %w", c.scope, err)
	}
	if c.apps.Audit == "" || len(ix.runs) == 0 {
		return nil, nil
	}
	recs, err := c.api.GetAll(ctx, c.apps.Audit, `record_type in ("NODE_ATTEMPT")`, attemptFields)
	if err != nil {
		return nil, fmt.Errorf("attempts of scope %s: %w", c.scope, err)
	}
	var out []kintoneapi.Record
	for _, r := range recs {
		if ix.runs[r.Str("run_id")] {
			out = append(out, r)
		}
	}
	return out, nil
}
