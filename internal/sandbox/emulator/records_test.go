package emulator

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture: one emulator, a raw caller and the ids/tokens of the apps tests use most.
type fixture struct {
	s                    *Server
	c                    *raw
	csv, state, req, log AppInfo
	deals                AppInfo
}

func newFixture(t *testing.T, opts Options) *fixture {
	s := startTest(t, opts)
	return &fixture{s: s, c: newRaw(t, s), csv: appInfo(t, s, "csv"), state: appInfo(t, s, "state"),
		req: appInfo(t, s, "request"), log: appInfo(t, s, "log"), deals: appInfo(t, s, "deals")}
}

func (f *fixture) addCSV(t *testing.T, key, value string) (id string) {
	t.Helper()
	r := f.c.do("POST", "/k/v1/record.json", f.csv.Tokens["full"], map[string]any{"app": f.csv.ID, "record": rec("test_key", key, "test_value", value)})
	require.Equal(t, 200, r.status, "%s", r.body)
	return r.json["id"].(string)
}

func TestAddRecordCompactBodyAndGet(t *testing.T) {
	f := newFixture(t, Options{})
	r := f.c.do("POST", "/k/v1/record.json", f.csv.Tokens["full"], map[string]any{"app": f.csv.ID, "record": rec("test_key", "a", "unknown_code", "ignored")})
	require.Equal(t, 200, r.status)
	assert.Equal(t, `{"id":"1","revision":"1"}`, string(r.body))
	assert.Equal(t, "application/json;charset=utf-8", r.header.Get("Content-Type"))
	assert.Equal(t, "100", r.header.Get("X-ConcurrencyLimit-Limit"))

	g := f.c.get("/k/v1/record.json", f.csv.Tokens["read"], url.Values{"app": {f.csv.ID}, "id": {"1"}})
	require.Equal(t, 200, g.status, "%s", g.body)
	record := g.json["record"]
	assert.Equal(t, "1", fieldValue(record, "$id"))
	assert.Equal(t, "1", fieldValue(record, "$revision"))
	assert.Equal(t, "1", fieldValue(record, codeRecordNo))
	assert.Equal(t, map[string]any{"code": "Administrator", "name": "Administrator"}, fieldValue(record, codeCreator))
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z$`, fieldValue(record, codeCreatedAt))
	assert.Equal(t, "", fieldValue(record, "test_value"), "field not sent reads as empty string")
	assert.NotContains(t, record, "unknown_code")
	m := record.(map[string]any)["test_key"].(map[string]any)
	assert.Equal(t, "SINGLE_LINE_TEXT", m["type"])

	// Errors of GET record.json.
	r = f.c.get("/k/v1/record.json", f.csv.Tokens["read"], url.Values{"app": {f.csv.ID}})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "CB_VA01", r.code())
	assert.Equal(t, []string{"id"}, r.errKeys())
	assert.NotEmpty(t, r.json["id"], "error bodies carry a request id")
	r = f.c.get("/k/v1/record.json", f.csv.Tokens["read"], url.Values{"app": {f.csv.ID}, "id": {"99"}})
	assert.Equal(t, 404, r.status)
	assert.Equal(t, "GAIA_RE01", r.code())
	r = f.c.get("/k/v1/record.json", f.csv.Tokens["read"], url.Values{"app": {"9999"}, "id": {"1"}})
	assert.Equal(t, 404, r.status)
	assert.Equal(t, "GAIA_AP01", r.code())
}

func TestAuthErrors(t *testing.T) {
	f := newFixture(t, Options{})
	body := map[string]any{"app": f.csv.ID, "record": rec("test_key", "a")}
	cases := []struct {
		name, token string
		status      int
		code        string
	}{
		{"no token", "", 401, "CB_AU01"},
		{"unknown token", "nope", 400, "GAIA_IA02"},
		{"one of several unknown", f.csv.Tokens["full"] + ",nope", 400, "GAIA_IA02"},
		{"two tokens of one app", f.csv.Tokens["full"] + "," + f.csv.Tokens["read"], 400, "GAIA_DA03"},
		{"token of another app", f.state.Tokens["full"], 400, "GAIA_IA02"},
		{"read-only token", f.csv.Tokens["read"], 403, "GAIA_NO01"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.c.do("POST", "/k/v1/record.json", tc.token, body)
			assert.Equal(t, tc.status, r.status, "%s", r.body)
			assert.Equal(t, tc.code, r.code())
		})
	}
	// Several tokens, one per app, are fine.
	r := f.c.do("POST", "/k/v1/record.json", f.state.Tokens["read"]+", "+f.csv.Tokens["full"], body)
	assert.Equal(t, 200, r.status, "%s", r.body)
	// Poller token: view/edit only, no add.
	r = f.c.do("POST", "/k/v1/record.json", f.req.Tokens["poller"], map[string]any{"app": f.req.ID, "record": rec("request_type", "START", "reason", "x")})
	assert.Equal(t, 403, r.status)
	assert.Equal(t, "GAIA_NO01", r.code())
	// FlowNet token has no delete permission.
	r = f.c.do("DELETE", "/k/v1/records.json", f.state.Tokens["flownet"], map[string]any{"app": f.state.ID, "ids": []string{"1"}})
	assert.Equal(t, 403, r.status)
	assert.Equal(t, "GAIA_NO01", r.code())
}

func TestFieldValidationAndNormalisation(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.state.Tokens["full"]
	add := func(record map[string]any) resp {
		return f.c.do("POST", "/k/v1/record.json", tok, map[string]any{"app": f.state.ID, "record": record})
	}
	// Required fields missing: both reported.
	r := add(rec("run_id", "x"))
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "CB_VA01", r.code())
	assert.ElementsMatch(t, []string{"record.record_key.value", "record.record_type.value"}, r.errKeys())

	// = on unique text: 64 characters are fine, 65 are not.
	r = add(rec("record_key", strings.Repeat("k", 64), "record_type", "NETWORK_RUN"))
	assert.Equal(t, 200, r.status, "%s", r.body)
	r = add(rec("record_key", strings.Repeat("k", 65), "record_type", "NETWORK_RUN"))
	assert.Equal(t, 400, r.status)
	assert.Equal(t, []string{"record.record_key.value"}, r.errKeys())
	assert.Contains(t, string(r.body), "Enter less than 65 characters.")

	// Option not in the drop-down.
	r = add(rec("record_key", "k2", "record_type", "NOPE"))
	assert.Equal(t, 400, r.status)
	assert.Contains(t, string(r.body), `The value, \"NOPE\", is not in options.`)

	// Non-numeric NUMBER.
	r = add(rec("record_key", "k3", "record_type", "NETWORK_RUN", "revision", "abc"))
	assert.Equal(t, 400, r.status)
	assert.Equal(t, []string{"record[revision].value"}, r.errKeys())

	// Normalisation: NUMBER as canonical string, DATETIME to the minute in UTC, empty
	// DROP_DOWN as null.
	r = add(rec("record_key", "k4", "record_type", "NETWORK_LOCK", "revision", 1.5e1,
		"lease_expires_at", "2026-08-15T09:30:59.999+09:00", "heartbeat_at", "2026-08-15"))
	require.Equal(t, 200, r.status, "%s", r.body)
	g := f.c.get("/k/v1/record.json", tok, url.Values{"app": {f.state.ID}, "id": {r.json["id"].(string)}})
	record := g.json["record"]
	assert.Equal(t, "15", fieldValue(record, "revision"))
	assert.Equal(t, "2026-08-15T00:30:00Z", fieldValue(record, "lease_expires_at"))
	assert.Equal(t, "2026-08-15T00:00:00Z", fieldValue(record, "heartbeat_at"))
	assert.Nil(t, fieldValue(record, "status"))
	assert.Equal(t, "", fieldValue(record, "started_at"))
	assert.Equal(t, []any{}, fieldValue(record, "source_bundle_attachment"))

	// Request app: request_state defaults to REQUESTED, CHECK_BOX validates options.
	rq := f.c.do("POST", "/k/v1/record.json", f.req.Tokens["full"], map[string]any{"app": f.req.ID, "record": rec("request_type", "START", "reason", "r")})
	require.Equal(t, 200, rq.status, "%s", rq.body)
	g = f.c.get("/k/v1/record.json", f.req.Tokens["read"], url.Values{"app": {f.req.ID}, "id": {rq.json["id"].(string)}})
	assert.Equal(t, "REQUESTED", fieldValue(g.json["record"], "request_state"))
	assert.Equal(t, []any{}, fieldValue(g.json["record"], "cancel_requested"))
	rq = f.c.do("PUT", "/k/v1/record.json", f.req.Tokens["full"], map[string]any{"app": f.req.ID, "id": rq.json["id"], "record": rec("cancel_requested", []string{"x"})})
	assert.Equal(t, 400, rq.status)
	assert.Equal(t, []string{"record.cancel_requested.values[0].value"}, rq.errKeys())

	// No body: the app parameter is required.
	req := f.c.do("POST", "/k/v1/record.json", tok, nil)
	assert.Equal(t, 400, req.status)
	assert.Equal(t, []string{"app"}, req.errKeys())
}

func TestInvalidJSON(t *testing.T) {
	f := newFixture(t, Options{})
	req := mustRequest(t, "POST", f.s.BaseURL()+"/k/v1/record.json", `{"app": 1,}`)
	req.Header.Set("X-Cybozu-API-Token", f.csv.Tokens["full"])
	r := f.c.send(req)
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "CB_IJ01", r.code())
}

func TestUniqueFields(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.log.Tokens["ksqlflow"]
	add := func(jobKey string) resp {
		return f.c.do("POST", "/k/v1/record.json", tok, map[string]any{"app": f.log.ID, "record": rec("job_key", jobKey, "status", "RUNNING")})
	}
	r := add("prod:job")
	require.Equal(t, 200, r.status)
	id := r.json["id"].(string)
	dup := add("prod:job")
	assert.Equal(t, 400, dup.status)
	assert.Equal(t, "CB_VA01", dup.code())
	assert.Equal(t, map[string]any{"record.job_key.value": map[string]any{"messages": []any{"This value already exists in another record."}}}, dup.json["errors"])
	// Empty values never collide.
	assert.Equal(t, 200, add("").status)
	assert.Equal(t, 200, add("").status)
	// Re-saving the same value on the same record is fine; moving it clears the key.
	r = f.c.do("PUT", "/k/v1/record.json", tok, map[string]any{"app": f.log.ID, "id": id, "record": rec("job_key", "prod:job")})
	assert.Equal(t, 200, r.status, "%s", r.body)
	r = f.c.do("PUT", "/k/v1/record.json", tok, map[string]any{"app": f.log.ID, "id": id, "record": rec("job_key", "", "job_key_done", "prod:job", "status", "SUCCESS")})
	assert.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, 200, add("prod:job").status, "released key can be taken again")

	// A required unique field cannot be cleared.
	st := f.c.do("POST", "/k/v1/record.json", f.state.Tokens["flownet"], map[string]any{"app": f.state.ID, "record": rec("record_key", "LOCK:x", "record_type", "NETWORK_LOCK", "lock_key", "x")})
	require.Equal(t, 200, st.status)
	r = f.c.do("PUT", "/k/v1/record.json", f.state.Tokens["flownet"], map[string]any{"app": f.state.ID, "id": st.json["id"], "record": rec("record_key", "")})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "CB_VA01", r.code())
	assert.Equal(t, []string{"record.record_key.value"}, r.errKeys())
	// Duplicate through an update.
	st2 := f.c.do("POST", "/k/v1/record.json", f.state.Tokens["flownet"], map[string]any{"app": f.state.ID, "record": rec("record_key", "LOCK:y", "record_type", "NETWORK_LOCK")})
	require.Equal(t, 200, st2.status)
	r = f.c.do("PUT", "/k/v1/record.json", f.state.Tokens["flownet"], map[string]any{"app": f.state.ID, "id": st2.json["id"], "record": rec("lock_key", "x")})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, []string{"record.lock_key.value"}, r.errKeys())
}

func TestUpdateRecord(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.csv.Tokens["full"]
	id := f.addCSV(t, "k1", "v1")
	put := func(body map[string]any) resp {
		body["app"] = f.csv.ID
		return f.c.do("PUT", "/k/v1/record.json", tok, body)
	}
	r := put(map[string]any{"id": id, "revision": "1", "record": rec("test_value", "v2")})
	require.Equal(t, 200, r.status)
	assert.Equal(t, `{"revision":"2"}`, string(r.body))
	r = put(map[string]any{"id": id, "revision": 1, "record": rec("test_value", "v3")})
	assert.Equal(t, 409, r.status)
	assert.Equal(t, "GAIA_CO02", r.code())
	assert.Equal(t, "The revision is not the latest. Someone may update a record.", r.json["message"])
	r = put(map[string]any{"id": id, "revision": -1, "record": rec("test_value", "v3")})
	assert.Equal(t, 200, r.status, "revision -1 is unchecked")
	r = put(map[string]any{"updateKey": map[string]any{"field": "test_key", "value": "k1"}, "revision": 3})
	assert.Equal(t, `{"revision":"4"}`, string(r.body), "an empty update still bumps the revision")
	r = put(map[string]any{"updateKey": map[string]any{"field": "test_key", "value": "k1"}, "record": rec("test_key", "k1", "test_value", "same key ok")})
	assert.Equal(t, 200, r.status, "%s", r.body)
	r = put(map[string]any{"updateKey": map[string]any{"field": "test_key", "value": "k1"}, "record": rec("test_key", "other")})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "CB_VA01", r.code())

	r = put(map[string]any{"id": id, "updateKey": map[string]any{"field": "test_key", "value": "k1"}})
	assert.Equal(t, 400, r.status)
	assert.ElementsMatch(t, []string{"id", "updateKey"}, r.errKeys())
	r = put(map[string]any{"record": rec("test_value", "x")})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "CB_VA01", r.code())
	r = put(map[string]any{"updateKey": map[string]any{"field": "test_value", "value": "x"}})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "GAIA_IQ27", r.code())
	r = put(map[string]any{"updateKey": map[string]any{"field": "test_key", "value": "missing"}})
	assert.Equal(t, 404, r.status)
	assert.Equal(t, "GAIA_RE20", r.code())
	r = put(map[string]any{"id": "999"})
	assert.Equal(t, 404, r.status)
	assert.Equal(t, "GAIA_RE01", r.code())
}

func TestBulkRecords(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.csv.Tokens["full"]
	var many []any
	for i := 0; i < 101; i++ {
		many = append(many, rec("test_key", fmt.Sprintf("b%d", i)))
	}
	r := f.c.do("POST", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID, "records": many})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, []string{"records"}, r.errKeys())

	r = f.c.do("POST", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID, "records": many[:3]})
	require.Equal(t, 200, r.status)
	assert.Equal(t, `{"ids":["1","2","3"],"revisions":["1","1","1"]}`, string(r.body))
	r = f.c.do("POST", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID, "records": []any{}})
	assert.Equal(t, `{"ids":[],"revisions":[]}`, string(r.body))

	// Duplicate inside one request: all-or-nothing, key names the index.
	r = f.c.do("POST", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID, "records": []any{rec("test_key", "n1"), rec("test_key", "n1")}})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, []string{"records[1].test_key.value"}, r.errKeys())
	count := f.c.get("/k/v1/records.json", tok, url.Values{"app": {f.csv.ID}, "query": {`test_key = "n1"`}})
	assert.Len(t, records(count), 0, "nothing added")

	// Bulk PUT: one stale revision aborts all.
	r = f.c.do("PUT", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID, "records": []any{
		map[string]any{"id": "1", "revision": "1", "record": rec("test_value", "x")},
		map[string]any{"id": "2", "revision": "7", "record": rec("test_value", "x")},
	}})
	assert.Equal(t, 409, r.status)
	g := f.c.get("/k/v1/record.json", tok, url.Values{"app": {f.csv.ID}, "id": {"1"}})
	assert.Equal(t, "1", fieldValue(g.json["record"], "$revision"), "first item rolled back")
	r = f.c.do("PUT", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID, "records": []any{
		map[string]any{"id": "1", "revision": "1", "record": rec("test_value", "x")},
		map[string]any{"updateKey": map[string]any{"field": "test_key", "value": "b1"}, "record": rec("test_value", "y")},
	}})
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, `{"records":[{"id":"1","revision":"2"},{"id":"2","revision":"2"}]}`, string(r.body))

	// Upsert: needs add as well as edit; reports the operation.
	up := map[string]any{"app": f.csv.ID, "upsert": true, "records": []any{
		map[string]any{"updateKey": map[string]any{"field": "test_key", "value": "b2"}, "record": rec("test_value", "u")},
		map[string]any{"updateKey": map[string]any{"field": "test_key", "value": "new"}, "record": rec("test_value", "n")},
	}}
	r = f.c.do("PUT", "/k/v1/records.json", tok, up)
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, `{"records":[{"id":"3","operation":"UPDATE","revision":"2"},{"id":"4","operation":"INSERT","revision":"1"}]}`, string(r.body))

	// DELETE: revisions checked, unknown id aborts, missing ids refused.
	r = f.c.do("DELETE", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID, "ids": []string{"1", "2"}, "revisions": []string{"2", "1"}})
	assert.Equal(t, 409, r.status)
	r = f.c.do("DELETE", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID, "ids": []string{"1", "99"}})
	assert.Equal(t, 404, r.status)
	assert.Equal(t, "GAIA_RE01", r.code())
	r = f.c.do("DELETE", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, []string{"ids"}, r.errKeys())
	g = f.c.get("/k/v1/record.json", tok, url.Values{"app": {f.csv.ID}, "id": {"1"}})
	assert.Equal(t, 200, g.status, "record 1 survived the failed deletes")
	req := mustRequest(t, "DELETE", f.s.BaseURL()+"/k/v1/records.json?app="+f.csv.ID+"&ids[0]=1&ids[1]=2&revisions[0]=2&revisions[1]=", "")
	req.Header.Set("X-Cybozu-API-Token", tok)
	r = f.c.send(req)
	assert.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, `{}`, string(r.body))
	g = f.c.get("/k/v1/record.json", tok, url.Values{"app": {f.csv.ID}, "id": {"1"}})
	assert.Equal(t, 404, g.status)
	// Ids are not reused after deletion.
	assert.Equal(t, "5", f.addCSV(t, "after-delete", ""))
}
