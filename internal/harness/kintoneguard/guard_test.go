package kintoneguard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

const (
	appState, appAudit, appReq, appLog, appCSV, appCust, appDeals = "10", "11", "12", "13", "14", "20", "21"
	scope                                                         = "KSQL_FLOW_TEST_261129223300_ab12_guard"
	other                                                         = "KSQL_FLOW_TEST_261129223300_cd34_other"
)

// fakeKintone serves records.json/record.json reads from memory and records
// every write it receives (a write reaching it after a refusal is a bug).
type fakeKintone struct {
	mu      sync.Mutex
	apps    map[string][]map[string]any // app → records (field → value)
	writes  []string
	deleted map[string][]string // app → ids in DELETE bodies
}

var inList = regexp.MustCompile(`(\$id|record_type|request_state|run_id) in \(([^)]*)\)`)

func (f *fakeKintone) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method != http.MethodGet {
		f.writes = append(f.writes, r.Method+" "+r.URL.Path)
		if r.Method == http.MethodDelete {
			var body struct {
				App string   `json:"app"`
				IDs []string `json:"ids"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			if f.deleted == nil {
				f.deleted = map[string][]string{}
			}
			f.deleted[body.App] = append(f.deleted[body.App], body.IDs...)
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/k/v1/record.json":
			_, _ = w.Write([]byte(`{"id":"999","revision":"1"}`))
		case r.Method == http.MethodPost:
			_, _ = w.Write([]byte(`{"ids":["999"],"revisions":["1"]}`))
		case r.Method == http.MethodPut:
			_, _ = w.Write([]byte(`{"revision":"2"}`))
		default:
			_, _ = w.Write([]byte(`{}`))
		}
		return
	}
	q := r.URL.Query()
	recs := f.apps[q.Get("app")]
	enc := func(rec map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range rec {
			out[k] = map[string]any{"type": "SINGLE_LINE_TEXT", "value": v}
		}
		return out
	}
	if r.URL.Path == "/k/v1/record.json" {
		for _, rec := range recs {
			if rec["$id"] == q.Get("id") {
				_ = json.NewEncoder(w).Encode(map[string]any{"record": enc(rec)})
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"GAIA_RE01","message":"not found"}`))
		return
	}
	var out []map[string]any
	for _, rec := range recs {
		ok := true
		for _, m := range inList.FindAllStringSubmatch(q.Get("query"), -1) {
			v, _ := rec[m[1]].(string)
			if !strings.Contains(m[2], `"`+v+`"`) && !regexp.MustCompile(`(^|[ ,])`+regexp.QuoteMeta(v)+`($|[ ,])`).MatchString(m[2]) {
				ok = false
			}
		}
		if ok {
			out = append(out, enc(rec))
		}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"records": out})
}

func (f *fakeKintone) writeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.writes)
}

func newFixture(t *testing.T) (*Client, *fakeKintone) {
	scopeNet := scope + "_success"
	f := &fakeKintone{apps: map[string][]map[string]any{
		appState: {
			{"$id": "1", "record_type": "NETWORK_RUN", "run_id": "netrun_a", "network_id": scopeNet, "business_key": scope},
			{"$id": "2", "record_type": "NODE_STATE", "run_id": "netrun_a"},
			{"$id": "3", "record_type": "NETWORK_LOCK", "lock_key": N1Key("e2e", scopeNet), "record_key": "LOCK:" + N1Key("e2e", scopeNet)},
			{"$id": "4", "record_type": "NETWORK_LOCK", "lock_key": "", "record_key": "LOCKDONE:xyz", "owner_invocation_id": "invoke_a"},
			{"$id": "5", "record_type": "CANCEL_REQUEST", "run_id": "netrun_a", "record_key": "CANCEL:netrun_a"},
			{"$id": "50", "record_type": "NETWORK_RUN", "run_id": "netrun_b", "network_id": other + "_success", "business_key": other},
			{"$id": "51", "record_type": "NODE_STATE", "run_id": "netrun_b"},
			{"$id": "52", "record_type": "NETWORK_LOCK", "lock_key": N1Key("e2e", other+"_success")},
			{"$id": "53", "record_type": "NETWORK_LOCK", "lock_key": N1Key("prod", scopeNet)},
			{"$id": "54", "record_type": "NETWORK_LOCK", "lock_key": "", "owner_invocation_id": "invoke_b"},
			{"$id": "55", "record_type": "NETWORK_RUN", "run_id": "netrun_p", "network_id": "monthly_close", "business_key": "2026-11"},
		},
		appAudit: {
			{"$id": "1", "record_type": "RUN_INVOCATION", "run_id": "netrun_a", "invocation_id": "invoke_a"},
			{"$id": "2", "record_type": "NODE_ATTEMPT", "run_id": "netrun_a", "node_attempt_id": "attempt_a"},
			{"$id": "3", "record_type": "ATTEMPT_RESOLUTION", "attempt_id": "attempt_a"},
			{"$id": "4", "record_type": "OPERATION_AUDIT", "run_id": "", "reason": `{"event_type":"NETWORK_LOCK_FORCE_RELEASED","network_id":"` + scopeNet + `"}`},
			{"$id": "50", "record_type": "RUN_INVOCATION", "run_id": "netrun_b", "invocation_id": "invoke_b"},
			{"$id": "51", "record_type": "NODE_ATTEMPT", "run_id": "netrun_b", "node_attempt_id": "attempt_b"},
			{"$id": "52", "record_type": "ATTEMPT_RESOLUTION", "attempt_id": "attempt_b"},
			{"$id": "53", "record_type": "OPERATION_AUDIT", "run_id": "", "reason": `{"network_id":"monthly_close"}`},
		},
		appReq: {
			{"$id": "1", "reason": scope + ":rerun", "request_state": "DONE"},
			{"$id": "2", "reason": scope + ":stop", "request_state": "REQUESTED"},
			{"$id": "50", "reason": other + ":rerun", "request_state": "ACCEPTED"},
			{"$id": "51", "reason": "月次締めの再実行", "request_state": "DONE"},
		},
		appCSV: {
			{"$id": "1", "test_key": CSVRowPrefix(scope) + "00001"},
			{"$id": "2", "test_key": CSVMarkerKey(scope)},
			{"$id": "50", "test_key": CSVRowPrefix(other) + "00001"},
		},
		appLog: {{"$id": "1", "correlation_id": "netrun_a", "job_id": "KSQL_FLOW_TEST_0123abcd_x"}},
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	api := kintoneapi.New(srv.URL, srv.Client(), map[string]string{})
	c, err := New(api, Apps{State: appState, Audit: appAudit, Request: appReq, Log: appLog, CSV: appCSV, Business: []string{appCust, appDeals}}, scope, Options{})
	require.NoError(t, err)
	return c, f
}

func rec(kv map[string]any) kintoneapi.Record { return kintoneapi.Values(kv) }

func TestGuardAllowedWrites(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		do   func(c *Client) error
	}{
		{"add request in scope", func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appReq, rec(map[string]any{"request_type": "RERUN", "reason": scope + ":rerun"}))
			return err
		}},
		{"add requests in scope", func(c *Client) error {
			_, _, err := c.AddRecords(ctx, appReq, []kintoneapi.Record{rec(map[string]any{"reason": scope + ":a"}), rec(map[string]any{"reason": scope + ":b"})})
			return err
		}},
		{"update scope request (cancel_requested)", func(c *Client) error {
			_, err := c.UpdateRecord(ctx, appReq, "2", rec(map[string]any{"cancel_requested": []string{"取消"}}), "")
			return err
		}},
		{"delete scope requests", func(c *Client) error { return c.DeleteRecords(ctx, appReq, []string{"1", "2"}, []string{"1", "1"}) }},
		{"add CSV rows", func(c *Client) error {
			_, _, err := c.AddRecords(ctx, appCSV, []kintoneapi.Record{rec(map[string]any{"test_key": CSVRowPrefix(scope) + "00002"}), rec(map[string]any{"test_key": CSVMarkerKey(scope)})})
			return err
		}},
		{"update CSV row by key", func(c *Client) error {
			_, err := c.UpdateByKey(ctx, appCSV, "test_key", CSVRowPrefix(scope)+"00001", rec(map[string]any{"test_value": "x"}), "")
			return err
		}},
		{"update CSV row by id", func(c *Client) error {
			_, err := c.UpdateRecord(ctx, appCSV, "1", rec(map[string]any{"test_value": "x"}), "")
			return err
		}},
		{"delete CSV rows", func(c *Client) error { return c.DeleteRecords(ctx, appCSV, []string{"1", "2"}, nil) }},
		{"cleanup state records of the scope", func(c *Client) error {
			return c.DeleteRecords(ctx, appState, []string{"1", "2", "3", "4", "5"}, []string{"1", "1", "1", "1", "1"})
		}},
		{"cleanup audit records of the scope", func(c *Client) error {
			return c.DeleteRecords(ctx, appAudit, []string{"1", "2", "3", "4"}, nil)
		}},
		{"upload for a request", func(c *Client) error {
			_, err := c.UploadFile(ctx, appReq, "a.txt", "text/plain", []byte("x"))
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newFixture(t)
			require.NoError(t, tc.do(c))
			require.Equal(t, 1, f.writeCount(), "exactly the one allowed write is sent")
		})
	}
}

func TestGuardRefusedWrites(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		rule string
		do   func(c *Client) error
	}{
		{"add to JOB log", RuleJobLogReadOnly, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appLog, rec(map[string]any{"job_id": "KSQL_FLOW_TEST_x"}))
			return err
		}},
		{"update JOB log", RuleJobLogReadOnly, func(c *Client) error {
			_, err := c.UpdateRecord(ctx, appLog, "1", rec(map[string]any{"status": "SUCCESS"}), "")
			return err
		}},
		{"delete JOB log rows of the scope", RuleJobLogReadOnly, func(c *Client) error { return c.DeleteRecords(ctx, appLog, []string{"1"}, nil) }},
		{"update JOB log by key", RuleJobLogReadOnly, func(c *Client) error {
			_, err := c.UpdateByKey(ctx, appLog, "job_key", "e2e:x", rec(map[string]any{"job_key": ""}), "")
			return err
		}},
		{"upload to JOB log", RuleJobLogReadOnly, func(c *Client) error {
			_, err := c.UploadFile(ctx, appLog, "a", "text/plain", nil)
			return err
		}},
		{"add to business app", RuleBusinessReadOnly, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appCust, rec(map[string]any{"name": scope + ":x"}))
			return err
		}},
		{"delete in business app", RuleBusinessReadOnly, func(c *Client) error { return c.DeleteRecords(ctx, appDeals, []string{"1"}, nil) }},
		{"write to unknown app", RuleUnknownApp, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, "4261", rec(map[string]any{"reason": scope + ":x"}))
			return err
		}},
		{"write to empty app id", RuleUnknownApp, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, "", rec(map[string]any{"reason": scope + ":x"}))
			return err
		}},
		{"request reason outside scope", RuleRequestScope, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appReq, rec(map[string]any{"reason": "please rerun"}))
			return err
		}},
		{"request reason = scope without separator", RuleRequestScope, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appReq, rec(map[string]any{"reason": scope + "2:x"}))
			return err
		}},
		{"request reason other scope", RuleRequestScope, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appReq, rec(map[string]any{"reason": other + ":x"}))
			return err
		}},
		{"request reason missing", RuleRequestScope, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appReq, rec(map[string]any{"request_type": "START"}))
			return err
		}},
		{"one bad record in a batch add", RuleRequestScope, func(c *Client) error {
			_, _, err := c.AddRecords(ctx, appReq, []kintoneapi.Record{rec(map[string]any{"reason": scope + ":a"}), rec(map[string]any{"reason": "x"})})
			return err
		}},
		{"update foreign request", RuleRequestScope, func(c *Client) error {
			_, err := c.UpdateRecord(ctx, appReq, "50", rec(map[string]any{"cancel_requested": []string{"取消"}}), "")
			return err
		}},
		{"update production request", RuleRequestScope, func(c *Client) error {
			_, err := c.UpdateRecord(ctx, appReq, "51", rec(map[string]any{"request_state": "DONE"}), "")
			return err
		}},
		{"move scope request out of scope", RuleRequestScope, func(c *Client) error {
			_, err := c.UpdateRecord(ctx, appReq, "1", rec(map[string]any{"reason": "x"}), "")
			return err
		}},
		{"delete mix of scope and foreign requests", RuleRequestScope, func(c *Client) error { return c.DeleteRecords(ctx, appReq, []string{"1", "50"}, nil) }},
		{"request update by key", RuleRequestByKey, func(c *Client) error {
			_, err := c.UpdateByKey(ctx, appReq, "reason", scope+":x", rec(map[string]any{"reason": scope + ":y"}), "")
			return err
		}},
		{"add to state app", RuleCleanupOnly, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appState, rec(map[string]any{"business_key": scope}))
			return err
		}},
		{"update scope record in state app", RuleCleanupOnly, func(c *Client) error {
			_, err := c.UpdateRecord(ctx, appState, "2", rec(map[string]any{"status": "FAILED"}), "")
			return err
		}},
		{"update audit by key", RuleCleanupOnly, func(c *Client) error {
			_, err := c.UpdateByKey(ctx, appAudit, "record_key", "INV:x", rec(map[string]any{"status": "FAILED"}), "")
			return err
		}},
		{"upload to state app", RuleUploadApp, func(c *Client) error {
			_, err := c.UploadFile(ctx, appState, "bundle.zip", "application/zip", nil)
			return err
		}},
		{"delete foreign run", RuleStateAuditScope, func(c *Client) error { return c.DeleteRecords(ctx, appState, []string{"1", "50"}, nil) }},
		{"delete foreign node state", RuleStateAuditScope, func(c *Client) error { return c.DeleteRecords(ctx, appState, []string{"51"}, nil) }},
		{"delete foreign lock", RuleStateAuditScope, func(c *Client) error { return c.DeleteRecords(ctx, appState, []string{"52"}, nil) }},
		{"delete scope network lock of another profile", RuleStateAuditScope, func(c *Client) error { return c.DeleteRecords(ctx, appState, []string{"53"}, nil) }},
		{"delete foreign tombstone", RuleStateAuditScope, func(c *Client) error { return c.DeleteRecords(ctx, appState, []string{"54"}, nil) }},
		{"delete production run", RuleStateAuditScope, func(c *Client) error { return c.DeleteRecords(ctx, appState, []string{"55"}, nil) }},
		{"delete foreign attempt", RuleStateAuditScope, func(c *Client) error { return c.DeleteRecords(ctx, appAudit, []string{"51"}, nil) }},
		{"delete foreign resolution", RuleStateAuditScope, func(c *Client) error { return c.DeleteRecords(ctx, appAudit, []string{"52"}, nil) }},
		{"delete foreign force-release audit", RuleStateAuditScope, func(c *Client) error { return c.DeleteRecords(ctx, appAudit, []string{"53"}, nil) }},
		{"add foreign CSV row", RuleCSVScope, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appCSV, rec(map[string]any{"test_key": CSVRowPrefix(other) + "00001"}))
			return err
		}},
		{"add CSV row with bare test prefix", RuleCSVScope, func(c *Client) error {
			_, _, err := c.AddRecord(ctx, appCSV, rec(map[string]any{"test_key": "KSQL_FLOW_TEST_x"}))
			return err
		}},
		{"CSV update by another field", RuleCSVScope, func(c *Client) error {
			_, err := c.UpdateByKey(ctx, appCSV, "test_value", CSVRowPrefix(scope)+"1", rec(map[string]any{"test_value": "x"}), "")
			return err
		}},
		{"CSV update by foreign key", RuleCSVScope, func(c *Client) error {
			_, err := c.UpdateByKey(ctx, appCSV, "test_key", CSVRowPrefix(other)+"00001", rec(map[string]any{"test_value": "x"}), "")
			return err
		}},
		{"delete foreign CSV row", RuleCSVScope, func(c *Client) error { return c.DeleteRecords(ctx, appCSV, []string{"1", "50"}, nil) }},
		{"raw POST", RuleRawWrite, func(c *Client) error {
			return c.Do(ctx, http.MethodPost, "/k/v1/record.json", "", map[string]any{"app": appReq}, nil)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newFixture(t)
			err := tc.do(c)
			require.Error(t, err)
			var r *RefusedError
			require.ErrorAs(t, err, &r)
			require.Equal(t, tc.rule, r.Rule, err.Error())
			require.Contains(t, err.Error(), "rule "+tc.rule)
			require.True(t, IsRefused(err))
			require.Zero(t, f.writeCount(), "a refused write must not be sent")
		})
	}
}

func TestGuardDeleteOfMissingRecordIsNotSent(t *testing.T) {
	c, f := newFixture(t)
	err := c.DeleteRecords(context.Background(), appReq, []string{"1", "777"}, nil)
	require.ErrorContains(t, err, "777 not found")
	require.Zero(t, f.writeCount())
	err = c.DeleteRecords(context.Background(), appReq, []string{"1) or ($id > 0"}, nil)
	require.ErrorContains(t, err, "not a decimal id")
	require.Zero(t, f.writeCount())
}

func TestGuardReadsPassThrough(t *testing.T) {
	c, _ := newFixture(t)
	recs, err := c.GetRecords(context.Background(), appLog, "", nil)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	r, err := c.GetRecord(context.Background(), appReq, "50")
	require.NoError(t, err)
	require.Equal(t, other+":rerun", r.Str("reason"))
}

func TestNewValidatesScope(t *testing.T) {
	api := kintoneapi.New("http://127.0.0.1:1", nil, nil)
	for _, s := range []string{"", "KSQL_FLOW_TEST_", "M5_261129", "ksql_flow_test_x"} {
		_, err := New(api, Apps{}, s, Options{})
		require.Error(t, err, s)
	}
	_, err := New(api, Apps{}, scope, Options{CSVKeyPrefixes: []string{"KSQL_FLOW_TEST_"}})
	require.Error(t, err)
	c, err := New(api, Apps{}, scope, Options{CSVKeyPrefixes: []string{CSVDestPrefix(scope, "A")}})
	require.NoError(t, err)
	require.True(t, c.inScopeCSVKey(CSVDestPrefix(scope, "A")+"00001"))
}

func TestN1KeyVector(t *testing.T) {
	// product-contract.md §0.1 test vector.
	require.Equal(t, "N1:dmj63FYc2G5JrhGrGQl6Ybua-wtKm-b9IezI1sWgxek", N1Key("prod", "monthly_close"))
}

func TestPendingReader(t *testing.T) {
	_, f := newFixture(t)
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := PendingReader{API: kintoneapi.New(srv.URL, srv.Client(), nil)}
	got, err := p.PendingRequests(context.Background(), appReq)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"2 REQUESTED", "50 ACCEPTED"}, []string{got[0].ID + " " + got[0].State, got[1].ID + " " + got[1].State})
	require.Zero(t, f.writeCount())
}
