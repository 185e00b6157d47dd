package kintoneguard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

func TestSweepScopeDeletesOnlyTheScope(t *testing.T) {
	c, f := newFixture(t)
	n, err := c.SweepScope(context.Background())
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"1", "2", "3", "4"}, f.deleted[appAudit], "runs' invocations/attempts, the resolution and the force-release audit")
	require.ElementsMatch(t, []string{"1", "2", "3", "4", "5"}, f.deleted[appState], "run, node state, lock, tombstone, hold")
	require.Equal(t, 9, n)
	require.Empty(t, f.deleted[appLog], "the JOB log is never cleaned")
	require.Equal(t, []string{"DELETE /k/v1/records.json", "DELETE /k/v1/records.json"}, f.writes, "audit first, then state")
}

// tokenMatching answers like real kintone: `run_id in (…)` and `owner_invocation_id in (…)`
// also return records whose value extends a listed one by "_…" (kintone's = / in on
// non-unique text is a token match). The plain fake compares those exactly.
type tokenMatching struct{ f *fakeKintone }

var (
	tokenIn = regexp.MustCompile(`(run_id|owner_invocation_id) in \(([^)]*)\)`)
	quoted  = regexp.MustCompile(`"([^"]*)"`)
)

func (tm tokenMatching) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := tokenIn.FindStringSubmatch(r.URL.Query().Get("query"))
	if r.Method != http.MethodGet || r.URL.Path != "/k/v1/records.json" || m == nil {
		tm.f.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	tm.f.ServeHTTP(rec, r)
	var body struct {
		Records []map[string]any `json:"records"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	tm.f.mu.Lock()
	for _, x := range tm.f.apps[r.URL.Query().Get("app")] {
		v, _ := x[m[1]].(string)
		for _, l := range quoted.FindAllStringSubmatch(m[2], -1) {
			if l[1] != "" && strings.HasPrefix(v, l[1]+"_") {
				out := map[string]any{}
				for k, val := range x {
					out[k] = map[string]any{"type": "SINGLE_LINE_TEXT", "value": val}
				}
				body.Records = append(body.Records, out)
				break
			}
		}
	}
	tm.f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// Against token-matching reads, the sweep still deletes only the scope's records: the
// sub-scope's run netrun_a_trial2 (its records, its invocation's lock) is found by the
// queries but filtered out in Go, so the guard never sees it. A released tombstone shaped as
// the product writes it (no lock_key, owner or network) cannot be traced and is left alone.
func TestSweepScopeFiltersTokenMatchesAndLeavesUntraceableTombstones(t *testing.T) {
	_, f := newFixture(t)
	f.mu.Lock()
	f.apps[appState] = append(f.apps[appState],
		map[string]any{"$id": "60", "record_type": "NODE_STATE", "run_id": "netrun_a_trial2"},
		map[string]any{"$id": "61", "record_type": "NETWORK_LOCK", "lock_key": "N1:other", "record_key": "LOCK:N1:other", "owner_invocation_id": "invoke_a_trial2"},
		map[string]any{"$id": "62", "record_type": "NETWORK_LOCK", "lock_key": "", "record_key": "LOCKDONE:abc", "owner_invocation_id": "", "lease_token": "", "status": "SUCCESS"},
	)
	f.apps[appAudit] = append(f.apps[appAudit],
		map[string]any{"$id": "60", "record_type": "RUN_INVOCATION", "run_id": "netrun_a_trial2", "invocation_id": "invoke_a_trial2"},
	)
	f.mu.Unlock()
	srv := httptest.NewServer(tokenMatching{f})
	t.Cleanup(srv.Close)
	c, err := New(kintoneapi.New(srv.URL, srv.Client(), map[string]string{}),
		Apps{State: appState, Audit: appAudit, Request: appReq, Log: appLog, CSV: appCSV, Business: []string{appCust, appDeals}}, scope, Options{})
	require.NoError(t, err)

	// Precondition: the reads really do return the sub-scope's records.
	recs, err := c.GetAll(context.Background(), appState, `run_id in ("netrun_a")`, nil)
	require.NoError(t, err)
	require.Len(t, recs, 4, "run, node state, hold and the sub-scope's node state")

	n, err := c.SweepScope(context.Background())
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"1", "2", "3", "4"}, f.deleted[appAudit])
	require.ElementsMatch(t, []string{"1", "2", "3", "4", "5"}, f.deleted[appState], "not 60/61 (sub-scope), not 62 (untraceable tombstone)")
	require.Equal(t, 9, n)
}
