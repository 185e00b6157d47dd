package kintone

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/kintoneapi"
)

// SweepScope deletes what the scope left in the state and audit apps (scenarios.md §3.6):
// every record of the scope's runs (NETWORK_RUN whose business_key or network_id starts with
// the scope), the scope networks' NETWORK_LOCK records and their LOCKDONE tombstones, the
// audit records of those runs, the force-release audits naming a scope network and the
// resolutions of scope attempts. Audit goes first, then state, in batches of 100 with ids and
// revisions, each batch through the guard. It returns how many records it deleted. The JOB
// log is never touched: its rows stay as evidence.
func (c *Client) SweepScope(ctx context.Context) (int, error) {
	ix, err := c.loadScopeRuns(ctx)
	if err != nil {
		return 0, fmt.Errorf("sweep scope %s: %w", c.scope, err)
	}
	if err := c.loadInvocationsAndAttempts(ctx, ix); err != nil {
		return 0, fmt.Errorf("sweep scope %s: %w", c.scope, err)
	}
	deleted := 0
	if c.apps.Audit != "" && len(ix.runs) > 0 {
		recs, err := c.recordsOfRuns(ctx, c.apps.Audit, ix)
		if err != nil {
			return deleted, fmt.Errorf("sweep scope %s: audit records: %w", c.scope, err)
		}
		// Records without a run_id: force-release audits name the network in
		// their reason JSON (§3.6), resolutions name the attempt.
		extra, err := c.api.GetAll(ctx, c.apps.Audit, `record_type in ("OPERATION_AUDIT", "ATTEMPT_RESOLUTION")`, nil)
		if err != nil {
			return deleted, fmt.Errorf("sweep scope %s: audit events: %w", c.scope, err)
		}
		for _, r := range extra {
			if c.inScopeDirect(ix, r) || c.inScopeIndirect(ix, r) {
				recs = append(recs, r)
			}
		}
		n, err := c.deleteInBatches(ctx, c.apps.Audit, dedupe(recs))
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("sweep scope %s: %w", c.scope, err)
		}
	}
	if c.apps.State != "" {
		recs, err := c.recordsOfRuns(ctx, c.apps.State, ix)
		if err != nil {
			return deleted, fmt.Errorf("sweep scope %s: state records: %w", c.scope, err)
		}
		locks, err := c.api.GetAll(ctx, c.apps.State, `record_type in ("NETWORK_LOCK")`, nil)
		if err != nil {
			return deleted, fmt.Errorf("sweep scope %s: lock records: %w", c.scope, err)
		}
		for _, r := range locks {
			if c.inScopeDirect(ix, r) || c.inScopeIndirect(ix, r) {
				recs = append(recs, r)
			}
		}
		n, err := c.deleteInBatches(ctx, c.apps.State, dedupe(recs))
		deleted += n
		if err != nil {
			return deleted, fmt.Errorf("sweep scope %s: %w", c.scope, err)
		}
	}
	return deleted, nil
}

func (c *Client) recordsOfRuns(ctx context.Context, app string, ix *scopeIndex) ([]kintoneapi.Record, error) {
	runs := make([]string, 0, len(ix.runs))
	for id := range ix.runs {
		runs = append(runs, id)
	}
	sort.Strings(runs)
	var out []kintoneapi.Record
	const perQuery = 50 // keeps the query string well inside kintone's URL limits
	for start := 0; start < len(runs); start += perQuery {
		chunk := runs[start:min(start+perQuery, len(runs))]
		quoted := make([]string, len(chunk))
		for i, id := range chunk {
			quoted[i] = `"` + strings.ReplaceAll(id, `"`, `\"`) + `"`
		}
		recs, err := c.api.GetAll(ctx, app, "run_id in ("+strings.Join(quoted, ", ")+")", nil)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
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
