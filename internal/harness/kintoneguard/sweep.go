package kintoneguard

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// SweepScope deletes what the scope left in the state and audit apps (scenarios.md §3.6):
// every record of the scope's runs (NETWORK_RUN whose business_key or network_id starts with
// the scope), the scope networks' held NETWORK_LOCK records (lock_key = N1(profile,
// network_id)), the audit records of those runs, the force-release audits naming a scope
// network and the resolutions of scope attempts. Audit goes first, then state, in batches
// of 100 with ids and revisions, each batch through the guard. It returns how many records
// it deleted. The JOB log is never touched: its rows stay as evidence.
//
// It reads only fields the product writes, so it does on the sandbox what it can do on a
// live tenant. A released lock is a LOCKDONE: tombstone whose lock_key, owner_invocation_id
// and lease_token the product has cleared and which names no network (product-contract
// §3.7): nothing ties it to a scope, so it is left alone (a known limitation, as in the
// original harness). Lock records that still name a scope invocation as owner are swept.
//
// kintone's `=` / `in` on non-unique text (run_id, owner_invocation_id) is a token match
// ("netrun_a" also finds "netrun_a_trial2"), so every query result is filtered exactly in Go
// before anything is deleted: a record of another scope never reaches the guard.
func (c *Client) SweepScope(ctx context.Context) (int, error) {
	audit, state, err := c.ScopeRecords(ctx)
	if err != nil {
		return 0, err
	}
	deleted := 0
	if len(audit) > 0 {
		n, err := c.deleteInBatches(ctx, c.apps.Audit, audit)
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("sweep scope %s: %w", c.scope, err)
		}
	}
	if len(state) > 0 {
		n, err := c.deleteInBatches(ctx, c.apps.State, state)
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("sweep scope %s: %w", c.scope, err)
		}
	}
	return deleted, nil
}

// ScopeRecords reads what SweepScope deletes, without deleting: the scope's audit records
// and its state records (runs, node states, held locks and tombstones it owns), each list
// without duplicates. `flowtest sweep` lists them before it deletes.
func (c *Client) ScopeRecords(ctx context.Context) (audit, state []kintoneapi.Record, err error) {
	ix, err := c.loadScopeRuns(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("sweep scope %s: %w", c.scope, err)
	}
	if err := c.loadInvocationsAndAttempts(ctx, ix); err != nil {
		return nil, nil, fmt.Errorf("sweep scope %s: %w", c.scope, err)
	}
	if c.apps.Audit != "" && len(ix.runs) > 0 {
		recs, err := c.recordsOfRuns(ctx, c.apps.Audit, ix)
		if err != nil {
			return nil, nil, fmt.Errorf("sweep scope %s: audit records: %w", c.scope, err)
		}
		// Records without a run_id: force-release audits name the network in
		// their reason JSON (§3.6), resolutions name the attempt.
		extra, err := c.api.GetAll(ctx, c.apps.Audit, `record_type in ("OPERATION_AUDIT", "ATTEMPT_RESOLUTION")`, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("sweep scope %s: audit events: %w", c.scope, err)
		}
		for _, r := range extra {
			if c.inScopeDirect(ix, r) || c.inScopeIndirect(ix, r) {
				recs = append(recs, r)
			}
		}
		audit = dedupe(recs)
	}
	if c.apps.State != "" {
		recs, err := c.recordsOfRuns(ctx, c.apps.State, ix)
		if err != nil {
			return nil, nil, fmt.Errorf("sweep scope %s: state records: %w", c.scope, err)
		}
		locks, err := c.scopeLocks(ctx, ix)
		if err != nil {
			return nil, nil, fmt.Errorf("sweep scope %s: lock records: %w", c.scope, err)
		}
		state = dedupe(append(recs, locks...))
	}
	return audit, state, nil
}

func (c *Client) recordsOfRuns(ctx context.Context, app string, ix *scopeIndex) ([]kintoneapi.Record, error) {
	return c.getAllIn(ctx, app, "", "run_id", slices.Sorted(maps.Keys(ix.runs)))
}

// scopeLocks reads the scope's NETWORK_LOCK records: held locks of the scope's networks by
// lock_key, and lock records whose owner_invocation_id is a scope invocation (the product
// clears it on release, so tombstones are not among them).
func (c *Client) scopeLocks(ctx context.Context, ix *scopeIndex) ([]kintoneapi.Record, error) {
	const lock = `record_type in ("NETWORK_LOCK")`
	held, err := c.getAllIn(ctx, c.apps.State, lock, "lock_key", slices.Sorted(maps.Keys(ix.lockKeys)))
	if err != nil {
		return nil, err
	}
	owned, err := c.getAllIn(ctx, c.apps.State, lock, "owner_invocation_id", slices.Sorted(maps.Keys(ix.invocations)))
	if err != nil {
		return nil, err
	}
	return append(held, owned...), nil
}

// getAllIn reads every record of app matching `[base and] field in (values)` and keeps those
// whose field equals one of values exactly (kintone's in on non-unique text is a token
// match). Values go 50 to a query, well inside kintone's URL limits.
func (c *Client) getAllIn(ctx context.Context, app, base, field string, values []string) ([]kintoneapi.Record, error) {
	var out []kintoneapi.Record
	const perQuery = 50
	for start := 0; start < len(values); start += perQuery {
		chunk := values[start:min(start+perQuery, len(values))]
		quoted := make([]string, len(chunk))
		for i, v := range chunk {
			quoted[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
		}
		cond := field + " in (" + strings.Join(quoted, ", ") + ")"
		if base != "" {
			cond = base + " and " + cond
		}
		recs, err := c.api.GetAll(ctx, app, cond, nil)
		if err != nil {
			return nil, fmt.Errorf("read %s in (%d values): %w", field, len(chunk), err)
		}
		out = append(out, kintoneapi.Where(recs, field, chunk...)...)
	}
	return out, nil
}

func dedupe(recs []kintoneapi.Record) []kintoneapi.Record {
	seen := map[string]bool{}
	var out []kintoneapi.Record
	for _, r := range recs {
		if !seen[r.ID()] {
			seen[r.ID()] = true
			out = append(out, r)
		}
	}
	return out
}

func (c *Client) deleteInBatches(ctx context.Context, app string, recs []kintoneapi.Record) (int, error) {
	done := 0
	for start := 0; start < len(recs); start += requestLimit {
		chunk := recs[start:min(start+requestLimit, len(recs))]
		ids := make([]string, len(chunk))
		revs := make([]string, len(chunk))
		for i, r := range chunk {
			ids[i], revs[i] = r.ID(), r.Revision()
		}
		if err := c.DeleteRecords(ctx, app, ids, revs); err != nil {
			return done, err
		}
		done += len(chunk)
	}
	return done, nil
}
