package kintoneguard

import (
	"context"
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// SweepRequests deletes the scope's records in the request app after a request scenario
// (scenarios.md §3.6): every record whose reason starts with "<scope>:", exactly. kintone's
// `like` on MULTI_LINE_TEXT is a word search on a live tenant, so it only narrows the read;
// the prefix is decided here, and the records the scenario itself created (known) are
// read by id as well, so a search index that lags cannot hide one. Deletes carry the
// revisions just read and pass the guard, which checks the reason again. It returns how many
// records it deleted and fails when one of the scope's records is still there afterwards.
func (c *Client) SweepRequests(ctx context.Context, known []string) (int, error) {
	app := c.apps.Request
	if app == "" {
		return 0, fmt.Errorf("sweep requests of %s: no request app configured", c.scope)
	}
	mine := func() ([]kintoneapi.Record, error) {
		recs, err := c.api.GetAll(ctx, app, `reason like "`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(c.scope)+`"`, nil)
		if err != nil {
			return nil, fmt.Errorf("read the scope's requests: %w", err)
		}
		if len(known) > 0 {
			byID, err := c.readPresent(ctx, app, known)
			if err != nil {
				return nil, fmt.Errorf("read the scenario's requests by id: %w", err)
			}
			recs = append(recs, byID...)
		}
		var out []kintoneapi.Record
		for _, r := range dedupe(recs) {
			if c.inScopeReason(r.Str(FieldReason)) {
				out = append(out, r)
			}
		}
		return out, nil
	}
	recs, err := mine()
	if err != nil {
		return 0, fmt.Errorf("sweep requests of %s: %w", c.scope, err)
	}
	n, err := c.deleteInBatches(ctx, app, recs)
	if err != nil {
		return n, fmt.Errorf("sweep requests of %s: %w", c.scope, err)
	}
	left, err := mine()
	if err != nil {
		return n, fmt.Errorf("sweep requests of %s: re-read: %w", c.scope, err)
	}
	if len(left) > 0 {
		var ids []string
		for _, r := range left {
			ids = append(ids, r.ID())
		}
		return n, fmt.Errorf("sweep requests of %s: %d record(s) still there after the delete: %s", c.scope, len(left), strings.Join(ids, ", "))
	}
	return n, nil
}

// readPresent reads the records of ids that exist, 100 ids to a query (a missing one is no
// error here: readByIDs decides that for the guard).
func (c *Client) readPresent(ctx context.Context, app string, ids []string) ([]kintoneapi.Record, error) {
	var out []kintoneapi.Record
	for start := 0; start < len(ids); start += requestLimit {
		chunk := ids[start:min(start+requestLimit, len(ids))]
		for _, id := range chunk {
			if id == "" || strings.Trim(id, "0123456789") != "" {
				return nil, fmt.Errorf("record id %q is not a decimal id", id)
			}
		}
		recs, err := c.api.GetRecords(ctx, app, fmt.Sprintf("$id in (%s) limit %d", strings.Join(chunk, ", "), requestLimit), nil)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}
