package emulator

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Places where a lenient emulator would hide a client bug that real kintone exposes.

// An upload key is single use even when two transactions on different apps (which hold
// different locks) attach it at the same time: the first one reserves it until it commits
// or rolls back.
func TestUploadKeySingleUseAcrossConcurrentTransactions(t *testing.T) {
	f := newFixture(t, Options{})
	up := upload(t, f, f.state.Tokens["flownet"], "b.zip", []byte("PK"))
	require.Equal(t, 200, up.status, "%s", up.body)
	key := up.json["fileKey"].(string)
	state, audit := f.s.byID[f.state.ID], f.s.byID[appInfo(t, f.s, "audit").ID]

	t1 := f.s.begin(nil, state)
	_, aerr := f.s.files.attach(t1, state, key)
	require.Nil(t, aerr)
	t2 := f.s.begin(nil, audit) // another app: not blocked by t1's lock
	_, aerr = f.s.files.attach(t2, audit, key)
	require.NotNil(t, aerr, "a key reserved by an open transaction cannot be attached again")
	assert.Equal(t, "GAIA_BL01", aerr.code)
	t2.rollback()

	t1.rollback() // the reservation ends with the transaction that made it
	t3 := f.s.begin(nil, audit)
	_, aerr = f.s.files.attach(t3, audit, key)
	assert.Nil(t, aerr, "a rolled-back attach frees the key")
	t3.commit()
	t4 := f.s.begin(nil, state)
	_, aerr = f.s.files.attach(t4, state, key)
	t4.rollback()
	require.NotNil(t, aerr, "a committed attach consumed the key")
	assert.Equal(t, "GAIA_BL01", aerr.code)
}

// kintone refuses a value for the record id ($id) or the RECORD_NUMBER field in a write
// (GAIA_UN10), e.g. a record read back and sent again unchanged.
func TestRecordIDFieldsAreNotWritable(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.csv.Tokens["full"]
	id := f.addCSV(t, "k1", "v1")
	for _, code := range []string{"$id", codeRecordNo} {
		r := f.c.do("POST", "/k/v1/record.json", tok, map[string]any{"app": f.csv.ID, "record": rec("test_key", "k2", code, "5")})
		assert.Equal(t, 400, r.status, "%s: %s", code, r.body)
		assert.Equal(t, "GAIA_UN10", r.code(), code)
		r = f.c.do("PUT", "/k/v1/record.json", tok, map[string]any{"app": f.csv.ID, "id": id, "record": rec("test_value", "x", code, id)})
		assert.Equal(t, 400, r.status, "%s: %s", code, r.body)
		assert.Equal(t, "GAIA_UN10", r.code(), code)
		r = f.c.do("POST", "/k/v1/records.json", tok, map[string]any{"app": f.csv.ID, "records": []any{rec("test_key", "k3"), rec("test_key", "k4", code, "9")}})
		assert.Equal(t, "GAIA_UN10", r.code(), code)
	}
	g := f.c.get("/k/v1/record.json", tok, url.Values{"app": {f.csv.ID}, "id": {id}})
	assert.Equal(t, "1", fieldValue(g.json["record"], "$revision"), "nothing written")
	q := f.query(t, f.csv, ``, url.Values{"totalCount": {"true"}})
	assert.Equal(t, "1", q.json["totalCount"], "nothing added")
}

// bulkRequest names each sub-request by its full API path, as kintone requires.
func TestBulkRequestNeedsTheFullAPIPath(t *testing.T) {
	f := newFixture(t, Options{})
	body := func(api string) map[string]any {
		return map[string]any{"requests": []any{map[string]any{"method": "POST", "api": api,
			"payload": map[string]any{"app": f.csv.ID, "record": rec("test_key", "b1")}}}}
	}
	r := f.c.do("POST", "/k/v1/bulkRequest.json", f.csv.Tokens["full"], body("record.json"))
	assert.Equal(t, 400, r.status, "%s", r.body)
	res, _ := r.json["results"].([]any)
	require.Len(t, res, 1, "%s", r.body)
	assert.Equal(t, "CB_VA01", res[0].(map[string]any)["code"])
	r = f.c.do("POST", "/k/v1/bulkRequest.json", f.csv.Tokens["full"], body("/k/v1/record.json"))
	assert.Equal(t, 200, r.status, "%s", r.body)
}

// A JSON body counts only with Content-Type: application/json (kintone requires it; Node's
// fetch would send a string body as text/plain if a client forgot the header).
func TestJSONBodyNeedsJSONContentType(t *testing.T) {
	f := newFixture(t, Options{})
	body := `{"app":"` + f.csv.ID + `","record":{"test_key":{"value":"ct"}}}`
	for _, ct := range []string{"", "text/plain;charset=UTF-8"} {
		req := mustRequest(t, "POST", f.s.BaseURL()+"/k/v1/record.json", body)
		req.Header.Del("Content-Type")
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		req.Header.Set("X-Cybozu-API-Token", f.csv.Tokens["full"])
		r := f.c.send(req)
		assert.Equal(t, 400, r.status, "Content-Type %q: %s", ct, r.body)
		assert.Equal(t, "CB_VA01", r.code())
		assert.Equal(t, []string{"app"}, r.errKeys(), "the body was not read")
	}
	req := mustRequest(t, "POST", f.s.BaseURL()+"/k/v1/record.json", body)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("X-Cybozu-API-Token", f.csv.Tokens["full"])
	r := f.c.send(req)
	assert.Equal(t, 200, r.status, "%s", r.body)
}

// kintone refuses URLs over about 8 KB; long GETs go as POST + X-HTTP-Method-Override.
func TestLongURLRefused(t *testing.T) {
	f := newFixture(t, Options{})
	keys := make([]string, 0, 500)
	for i := 0; i < 500; i++ {
		keys = append(keys, `"key-`+strings.Repeat("x", 10)+`"`)
	}
	q := `test_key in (` + strings.Join(keys, ",") + `)`
	r := f.query(t, f.csv, q, nil)
	assert.Equal(t, 414, r.status, "%d bytes of query", len(q))

	req := mustRequest(t, "POST", f.s.BaseURL()+"/k/v1/records.json", `{"app":"`+f.csv.ID+`","query":`+jsonString(q)+`}`)
	req.Header.Set("X-HTTP-Method-Override", "GET")
	req.Header.Set("X-Cybozu-API-Token", f.csv.Tokens["read"])
	r = f.c.send(req)
	assert.Equal(t, 200, r.status, "%s", r.body)
}

// A cursor's query is a string, as for records.json.
func TestCursorQueryMustBeAString(t *testing.T) {
	f := newFixture(t, Options{})
	r := f.c.do("POST", "/k/v1/records/cursor.json", f.deals.Tokens["read"], map[string]any{"app": f.deals.ID, "query": 5})
	assert.Equal(t, 400, r.status, "%s", r.body)
	assert.Equal(t, "CB_IJ01", r.code())
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
