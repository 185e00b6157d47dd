package flownet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/google/uuid"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// What the real FlowNet 1.0.0 records while it admits a resume, before its scheduler runs:
// the Invocation of a plain resume (created from the stored Node States before the
// remaining checks, its node sets sorted by node id), and the Run aggregate recomputed from
// the complete Node State set with a RECONCILIATION_REPAIR audit when the stored one is
// stale (after a resolve-node, which leaves the aggregate to the next run-network).

// hasInputs says a node of the network reads CSV inputs.
func hasInputs(n *Network) bool {
	for _, nd := range n.Nodes {
		if len(nd.Inputs) > 0 {
			return true
		}
	}
	return false
}

// resumeSets are a resume's creation sets, each sorted by node id: preserved the SUCCESS
// nodes, blocked the UNKNOWN and the non-idempotent FAILED/CANCELLED ones, selected the rest.
func resumeSets(ids []string, state func(id string) (status string, idempotent bool)) (sel, pres, blocked []string) {
	for _, id := range ids {
		st, idem := state(id)
		switch {
		case st == StatusSuccess:
			pres = append(pres, id)
		case st == StatusUnknown || ((st == StatusFailed || st == StatusCancelled) && !idem):
			blocked = append(blocked, id)
		default:
			sel = append(sel, id)
		}
	}
	sort.Strings(sel)
	sort.Strings(pres)
	sort.Strings(blocked)
	return nonNil(sel), nonNil(pres), nonNil(blocked)
}

// createResumeInvocationFromStates creates a plain resume's Invocation from the Node States
// as stored (none yet: every set empty).
func (e *execution) createResumeInvocationFromStates(ctx context.Context) error {
	recs, err := e.st.findExact(ctx, e.st.stateApp, `record_type in ("NODE_STATE") and run_id in (`+q(e.runID)+`)`, "run_id", e.runID)
	if err != nil {
		return err
	}
	byNode := map[string][2]string{}
	var ids []string
	for _, r := range recs {
		if _, dup := byNode[r.Str("node_id")]; !dup {
			ids = append(ids, r.Str("node_id"))
		}
		byNode[r.Str("node_id")] = [2]string{r.Str("status"), r.Str("idempotent")}
	}
	sel, pres, blocked := resumeSets(ids, func(id string) (string, bool) {
		v := byNode[id]
		return v[0], v[1] == "true"
	})
	return e.createInvocation(ctx, "resume incomplete run", sel, pres, blocked)
}

// reconcileAggregate writes the Run aggregate recomputed from the loaded Node States when it
// differs from the stored one, and records the repair.
func (e *execution) reconcileAggregate(ctx context.Context) error {
	var statuses []string
	for _, id := range e.order {
		statuses = append(statuses, e.states[id].status)
	}
	before := e.run.Str("status")
	agg := Aggregate(statuses, e.run.Str("started_at") != "")
	if agg == before {
		return nil
	}
	now := isoMillis(e.c.now())
	revBefore := e.runRev
	rev, err := e.st.update(ctx, e.st.stateApp, e.run.Str("record_key"), vals(map[string]any{"status": agg, "updated_at": now}), e.runRev)
	if err != nil {
		return fmt.Errorf("recompute the aggregate of Run %s: %w", e.runID, err)
	}
	e.runRev = rev
	e.run["status"] = kintoneapi.Field{Value: agg}
	e.run["updated_at"] = kintoneapi.Field{Value: now}
	eventID := uuid.NewString()
	b, _ := json.Marshal(map[string]any{
		"event_id": eventID, "event_type": "RECONCILIATION_REPAIR", "repair_type": "RUN_AGGREGATE_RECOMPUTED",
		"run_id": e.runID, "target_type": "NETWORK_RUN", "target_id": e.runID,
		"before": map[string]any{"status": before, "revision": atoi(revBefore)},
		"after":  map[string]any{"status": agg, "revision": atoi(rev)},
		"basis":  "Network Run status recomputed from the complete Node State set using specification section 10", "occurred_at": now,
	})
	if _, _, err := e.st.insert(ctx, e.st.auditApp, "OP:"+eventID, vals(map[string]any{
		"record_type": "OPERATION_AUDIT", "run_id": e.runID, "result_code": "RUN_AGGREGATE_RECOMPUTED",
		"reason": string(b), "resolved_at": now,
	})); err != nil {
		return fmt.Errorf("audit the recomputed aggregate of Run %s: %w", e.runID, err)
	}
	return nil
}
