package emulator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/joho/godotenv"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBulkRequest(t *testing.T) {
	f := newFixture(t, Options{})
	tokens := f.csv.Tokens["full"] + "," + f.state.Tokens["flownet"]
	id := f.addCSV(t, "k1", "v1")
	ok := map[string]any{"requests": []any{
		map[string]any{"method": "POST", "api": "/k/v1/record.json", "payload": map[string]any{"app": f.state.ID, "record": rec("record_key", "R1", "record_type", "NETWORK_RUN")}},
		map[string]any{"method": "PUT", "api": "/k/v1/record.json", "payload": map[string]any{"app": f.csv.ID, "id": id, "revision": "1", "record": rec("test_value", "v2")}},
		map[string]any{"method": "POST", "api": "/k/v1/records.json", "payload": map[string]any{"app": f.csv.ID, "records": []any{rec("test_key", "k2")}}},
	}}
	r := f.c.do("POST", "/k/v1/bulkRequest.json", tokens, ok)
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, `{"results":[{"id":"1","revision":"1"},{"revision":"2"},{"ids":["2"],"revisions":["1"]}]}`, string(r.body))

	// Second sub-request fails (stale revision): everything rolled back, error at index 1.
	bad := map[string]any{"requests": []any{
		map[string]any{"method": "POST", "api": "/k/v1/record.json", "payload": map[string]any{"app": f.state.ID, "record": rec("record_key", "R2", "record_type", "NETWORK_RUN")}},
		map[string]any{"method": "PUT", "api": "/k/v1/record.json", "payload": map[string]any{"app": f.csv.ID, "id": id, "revision": "1", "record": rec("test_value", "v3")}},
		map[string]any{"method": "DELETE", "api": "/k/v1/records.json", "payload": map[string]any{"app": f.csv.ID, "ids": []string{"2"}}},
	}}
	r = f.c.do("POST", "/k/v1/bulkRequest.json", tokens, bad)
	assert.Equal(t, 409, r.status, "%s", r.body)
	res := r.json["results"].([]any)
	require.Len(t, res, 3)
	assert.Equal(t, map[string]any{}, res[0])
	assert.Equal(t, "GAIA_CO02", res[1].(map[string]any)["code"])
	assert.Equal(t, map[string]any{}, res[2])
	q := f.query(t, f.state, `record_key = "R2"`, nil)
	assert.Empty(t, records(q), "first sub-request rolled back")

	var many []any
	for i := 0; i < 21; i++ {
		many = append(many, ok["requests"].([]any)[0])
	}
	r = f.c.do("POST", "/k/v1/bulkRequest.json", tokens, map[string]any{"requests": many})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "CB_VA01", r.code())
	// Missing token for one of the apps fails at that index.
	r = f.c.do("POST", "/k/v1/bulkRequest.json", f.csv.Tokens["full"], ok)
	assert.Equal(t, 400, r.status)
	assert.Equal(t, "GAIA_IA02", r.json["results"].([]any)[0].(map[string]any)["code"])
}

func TestCursor(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.deals.Tokens["read"]
	r := f.c.do("POST", "/k/v1/records/cursor.json", tok, map[string]any{"app": f.deals.ID, "query": `確度 in ("A") order by $id asc`, "size": 25, "fields": []string{"$id", "案件コード"}})
	require.Equal(t, 200, r.status, "%s", r.body)
	cid := r.json["id"].(string)
	total := r.json["totalCount"].(string)
	var got []string
	for {
		g := f.c.get("/k/v1/records/cursor.json", tok, url.Values{"id": {cid}})
		require.Equal(t, 200, g.status, "%s", g.body)
		for _, x := range records(g) {
			got = append(got, fieldValue(x, "$id").(string))
			assert.Len(t, x, 2)
		}
		if g.json["next"] != true {
			break
		}
	}
	assert.Equal(t, total, fmt.Sprint(len(got)))
	for i := 1; i < len(got); i++ {
		var a, b int
		fmt.Sscan(got[i-1], &a)
		fmt.Sscan(got[i], &b)
		assert.Less(t, a, b, "cursor keeps the query's order")
	}
	g := f.c.get("/k/v1/records/cursor.json", tok, url.Values{"id": {cid}})
	assert.Equal(t, 404, g.status, "a cursor read to the end is gone")

	r = f.c.do("POST", "/k/v1/records/cursor.json", tok, map[string]any{"app": f.deals.ID, "query": `limit 10`})
	assert.Equal(t, 400, r.status)
	assert.Equal(t, []string{"query"}, r.errKeys())
	r = f.c.do("POST", "/k/v1/records/cursor.json", tok, map[string]any{"app": f.deals.ID, "size": 501})
	assert.Equal(t, 400, r.status)

	var open []string
	for i := 0; i < maxCursors; i++ {
		r = f.c.do("POST", "/k/v1/records/cursor.json", tok, map[string]any{"app": f.deals.ID})
		require.Equal(t, 200, r.status)
		open = append(open, r.json["id"].(string))
	}
	r = f.c.do("POST", "/k/v1/records/cursor.json", tok, map[string]any{"app": f.deals.ID})
	assert.Equal(t, "GAIA_TM12", r.code(), "at most 10 cursors")
	d := f.c.do("DELETE", "/k/v1/records/cursor.json", tok, map[string]any{"id": open[0]})
	assert.Equal(t, 200, d.status)
	r = f.c.do("POST", "/k/v1/records/cursor.json", tok, map[string]any{"app": f.deals.ID})
	assert.Equal(t, 200, r.status, "deleting freed a slot")
}

func upload(t *testing.T, f *fixture, token, name string, data []byte) resp {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
	h["Content-Type"] = []string{"application/zip"}
	part, err := mw.CreatePart(h)
	require.NoError(t, err)
	part.Write(data)
	require.NoError(t, mw.Close())
	req, err := http.NewRequest("POST", f.s.BaseURL()+"/k/v1/file.json", &buf)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Cybozu-API-Token", token)
	return f.c.send(req)
}

func TestFiles(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.state.Tokens["flownet"]
	up := upload(t, f, tok, "execution-bundle.zip", []byte("PK-bundle"))
	require.Equal(t, 200, up.status, "%s", up.body)
	key := up.json["fileKey"].(string)
	require.NotEmpty(t, key)

	add := func(k string) resp {
		return f.c.do("POST", "/k/v1/record.json", tok, map[string]any{"app": f.state.ID, "record": map[string]any{
			"record_key": v("R:" + k), "record_type": v("NETWORK_RUN"), "source_bundle_attachment": v([]any{map[string]any{"fileKey": k}})}})
	}
	r := add(key)
	require.Equal(t, 200, r.status, "%s", r.body)
	r2 := add(key)
	assert.Equal(t, 404, r2.status, "an upload key is single use")
	assert.Equal(t, "GAIA_BL01", r2.code())

	g := f.c.get("/k/v1/record.json", tok, url.Values{"app": {f.state.ID}, "id": {r.json["id"].(string)}})
	files := fieldValue(g.json["record"], "source_bundle_attachment").([]any)
	require.Len(t, files, 1)
	fv := files[0].(map[string]any)
	assert.Equal(t, "execution-bundle.zip", fv["name"])
	assert.Equal(t, "application/zip", fv["contentType"])
	assert.Equal(t, "9", fv["size"])
	dk := fv["fileKey"].(string)
	assert.NotEqual(t, key, dk, "download key differs from the upload key")

	d := f.c.get("/k/v1/file.json", tok, url.Values{"fileKey": {dk}})
	require.Equal(t, 200, d.status)
	assert.Equal(t, "PK-bundle", string(d.body))
	assert.Equal(t, "application/zip", d.header.Get("Content-Type"))
	d = f.c.get("/k/v1/file.json", tok, url.Values{"fileKey": {key}})
	assert.Equal(t, 404, d.status, "the upload key does not download")
	assert.Equal(t, "GAIA_BL01", d.code())

	// Keeping an attachment by sending back its download key.
	u := f.c.do("PUT", "/k/v1/record.json", tok, map[string]any{"app": f.state.ID, "id": r.json["id"], "record": map[string]any{"source_bundle_attachment": v([]any{map[string]any{"fileKey": dk}})}})
	assert.Equal(t, 200, u.status, "%s", u.body)
	d = f.c.get("/k/v1/file.json", tok, url.Values{"fileKey": {dk}})
	assert.Equal(t, 200, d.status, "kept attachment still downloads")
	u = f.c.do("PUT", "/k/v1/record.json", tok, map[string]any{"app": f.state.ID, "id": r.json["id"], "record": map[string]any{"source_bundle_attachment": v([]any{})}})
	require.Equal(t, 200, u.status, "%s", u.body)
	d = f.c.get("/k/v1/file.json", tok, url.Values{"fileKey": {dk}})
	assert.Equal(t, 404, d.status, "a removed attachment is gone")

	// Through the shared client as well.
	c := goClient(t, f.s, "flownet")
	k, err := c.UploadFile(context.Background(), f.state.ID, "b.zip", "application/zip", []byte("xyz"))
	require.NoError(t, err)
	id, _, err := c.AddRecord(context.Background(), f.state.ID, kintoneapi.Record{"record_key": {Value: "R:b"}, "record_type": {Value: "NETWORK_RUN"}, "source_bundle_attachment": {Value: []map[string]string{{"fileKey": k}}}})
	require.NoError(t, err)
	got, err := c.GetRecord(context.Background(), f.state.ID, id)
	require.NoError(t, err)
	var fvs []fileVal
	require.NoError(t, json.Unmarshal([]byte(got.Str("source_bundle_attachment")), &fvs))
	data, err := c.DownloadFile(context.Background(), f.state.ID, fvs[0].FileKey)
	require.NoError(t, err)
	assert.Equal(t, "xyz", string(data))
}

func TestAppAndFormFields(t *testing.T) {
	f := newFixture(t, Options{})
	r := f.c.get("/k/v1/app.json", f.state.Tokens["read"], url.Values{"id": {f.state.ID}})
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, f.state.ID, r.json["appId"])
	assert.Equal(t, "kSQL-FlowNet 実行管理", r.json["name"])

	r = f.c.get("/k/v1/app/form/fields.json", f.state.Tokens["read"], url.Values{"app": {f.state.ID}})
	require.Equal(t, 200, r.status, "%s", r.body)
	props := r.json["properties"].(map[string]any)
	rk := props["record_key"].(map[string]any)
	assert.Equal(t, "SINGLE_LINE_TEXT", rk["type"])
	assert.Equal(t, true, rk["unique"])
	assert.Equal(t, true, rk["required"])
	st := props["record_type"].(map[string]any)
	assert.Contains(t, st["options"], "NETWORK_LOCK")
	assert.Equal(t, "CREATED_TIME", props[codeCreatedAt].(map[string]any)["type"])
	assert.Equal(t, "1", r.json["revision"])

	r = f.c.get("/k/v1/app/form/layout.json", f.csv.Tokens["read"], url.Values{"app": {f.csv.ID}})
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Len(t, r.json["layout"], 2)

	r = f.c.get("/k/v1/app/form/fields.json", f.state.Tokens["read"], url.Values{"app": {f.csv.ID}})
	assert.Equal(t, "GAIA_IA02", r.code())
	r = f.c.get("/k/v1/nope.json", f.state.Tokens["read"], nil)
	assert.Equal(t, 404, r.status)
}

func TestLatencyAppliesPerApp(t *testing.T) {
	f := newFixture(t, Options{Latency: map[string]time.Duration{"customers": 300 * time.Millisecond}})
	cust := appInfo(t, f.s, "customers")
	start := time.Now()
	r := f.query(t, cust, `limit 1`, nil)
	require.Equal(t, 200, r.status)
	// A lower bound only: the delay is a floor, never a timing race.
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)

	_, err := Start(context.Background(), Options{Latency: map[string]time.Duration{"nope": time.Second}})
	assert.ErrorContains(t, err, "unknown app role")
}

// TestRaceDA02 drives the race deterministically: the competing write lands after the
// losing request arrived (its arrival snapshot is taken before the write).
func TestRaceDA02(t *testing.T) {
	for _, race := range []bool{false, true} {
		t.Run(fmt.Sprint("RaceDA02=", race), func(t *testing.T) {
			f := newFixture(t, Options{RaceDA02: race})
			id := f.addCSV(t, "k", "v")
			a := f.s.byID[f.csv.ID]
			arrival := map[*app]uint64{a: a.modSeq.Load()}
			r := f.c.do("PUT", "/k/v1/record.json", f.csv.Tokens["full"], map[string]any{"app": f.csv.ID, "id": id, "revision": 1, "record": rec("test_value", "winner")})
			require.Equal(t, 200, r.status)

			tx := f.s.begin(arrival, a)
			_, aerr := tx.update(a, a.records[1], fieldInput{}, 1, "record")
			tx.rollback()
			require.NotNil(t, aerr)
			if race {
				assert.Equal(t, 400, aerr.status)
				assert.Equal(t, "GAIA_DA02", aerr.code)
			} else {
				assert.Equal(t, "GAIA_CO02", aerr.code)
			}
			// A stale revision that was already stale on arrival is a plain conflict.
			r = f.c.do("PUT", "/k/v1/record.json", f.csv.Tokens["full"], map[string]any{"app": f.csv.ID, "id": id, "revision": 1})
			assert.Equal(t, 409, r.status)
			assert.Equal(t, "GAIA_CO02", r.code())
		})
	}
}

func TestDataDirRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s1, err := Start(context.Background(), Options{DataDir: dir})
	require.NoError(t, err)
	f := &fixture{s: s1, c: newRaw(t, s1), csv: appInfo(t, s1, "csv"), state: appInfo(t, s1, "state")}
	f.addCSV(t, "k1", "v1")
	up := upload(t, f, f.state.Tokens["flownet"], "b.zip", []byte("bytes"))
	r := f.c.do("POST", "/k/v1/record.json", f.state.Tokens["flownet"], map[string]any{"app": f.state.ID, "record": map[string]any{
		"record_key": v("R"), "record_type": v("NETWORK_RUN"), "status": v("RUNNING"), "blocked_by": v(`["a"]`),
		"source_bundle_attachment": v([]any{map[string]any{"fileKey": up.json["fileKey"]}})}})
	require.Equal(t, 200, r.status, "%s", r.body)
	before := f.c.get("/k/v1/record.json", f.state.Tokens["read"], url.Values{"app": {f.state.ID}, "id": {"1"}})
	require.NoError(t, s1.Close())
	assert.FileExists(t, filepath.Join(dir, "apps", "state.json"))

	s2 := startTest(t, Options{DataDir: dir})
	assert.Equal(t, s1.Apps(), s2.Apps(), "tokens survive a restart")
	f2 := &fixture{s: s2, c: newRaw(t, s2), csv: appInfo(t, s2, "csv"), state: appInfo(t, s2, "state")}
	after := f2.c.get("/k/v1/record.json", f2.state.Tokens["read"], url.Values{"app": {f2.state.ID}, "id": {"1"}})
	assert.Equal(t, before.json, after.json)
	dup := f2.c.do("POST", "/k/v1/record.json", f2.csv.Tokens["full"], map[string]any{"app": f2.csv.ID, "record": rec("test_key", "k1")})
	assert.Equal(t, "CB_VA01", dup.code(), "unique index rebuilt")
	assert.Equal(t, "2", f2.addCSV(t, "k2", ""), "ids continue")
	dk := fieldValue(after.json["record"], "source_bundle_attachment").([]any)[0].(map[string]any)["fileKey"].(string)
	d := f2.c.get("/k/v1/file.json", f2.state.Tokens["read"], url.Values{"fileKey": {dk}})
	assert.Equal(t, "bytes", string(d.body))
	deals := appInfo(t, s2, "deals")
	q := f2.query(t, deals, ``, url.Values{"totalCount": {"true"}})
	assert.Equal(t, "160", q.json["totalCount"], "seed loaded from the data dir, not inserted twice")
}

func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "sandbox.env")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := serve(ctx, []string{"--env-out", envFile, "--data-dir", filepath.Join(dir, "data"), "--latency", "log=1ms,deals=2ms",
			"--concurrency-limit", "7", "--daily-request-limit", "1"}, pw, &stderr)
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err, "stderr: %s", stderr.String())
	var info struct {
		BaseURL string    `json:"base_url"`
		CAFile  string    `json:"ca_file"`
		Apps    []AppInfo `json:"apps"`
	}
	require.NoError(t, json.Unmarshal([]byte(line), &info))
	assert.True(t, strings.HasPrefix(info.BaseURL, "https://127.0.0.1:"))
	var roles []string
	for _, a := range info.Apps {
		roles = append(roles, a.Role)
		assert.NotEmpty(t, a.Tokens["full"])
	}
	assert.Equal(t, []string{"state", "audit", "request", "log", "customers", "deals", "csv"}, roles)
	assert.Contains(t, line, `"tokens":{`)

	env, err := godotenv.Read(envFile)
	require.NoError(t, err)
	assert.Equal(t, info.BaseURL, env["KSQL_FLOWNET_BASE_URL"])
	assert.Equal(t, info.CAFile, env["SSL_CERT_FILE"])
	assert.Equal(t, info.Apps[0].Tokens["flownet"], env["KSQL_FLOWNET_STATE_API_TOKEN"])
	assert.Equal(t, info.Apps[3].Tokens["read"], env["KSQL_FLOW_LOG_API_TOKEN"])
	assert.Equal(t, info.Apps[6].ID, env["KINTONE_CSV_APP_ID"])
	for _, name := range []string{"KSQL_FLOWNET_REQUEST_APP_ID", "KSQL_FLOWNET_REQUEST_API_TOKEN"} {
		_, set := env[name]
		assert.False(t, set, "%s is the production request-app name flowtest's preflight compares against", name)
	}

	// A real client with the CA from the line works against it.
	hc, err := kintoneapi.HTTPClientWithCA(info.CAFile)
	require.NoError(t, err)
	c := kintoneapi.New(info.BaseURL, hc, map[string]string{info.Apps[6].ID: info.Apps[6].Tokens["full"]})
	_, _, err = c.AddRecord(ctx, info.Apps[6].ID, kintoneapi.Values(map[string]any{"test_key": "from-serve"}))
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, info.BaseURL+"/k/v1/records.json?app="+info.Apps[6].ID, nil)
	require.NoError(t, err)
	req.Header.Set("X-Cybozu-API-Token", info.Apps[6].Tokens["full"])
	res, err := hc.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 200, res.StatusCode, "the second request of the day is served past the limit of 1")
	assert.Equal(t, "7", res.Header.Get("X-ConcurrencyLimit-Limit"), "--concurrency-limit reaches the server")

	cancel() // what SIGINT/SIGTERM do through signal.NotifyContext
	select {
	case code := <-done:
		assert.Equal(t, 0, code, "stderr: %s", stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
	assert.Contains(t, stderr.String(), "daily request limit of app "+info.Apps[6].ID+" (csv) exceeded", "--daily-request-limit warns on stderr")
	saved, err := os.ReadFile(filepath.Join(dir, "data", "apps", "csv.json"))
	require.NoError(t, err)
	assert.Contains(t, string(saved), "from-serve", "data dir saved on shutdown")
	_, err = os.Stat(info.CAFile)
	assert.True(t, os.IsNotExist(err), "CA file removed on shutdown")

	assert.Equal(t, 2, Main(nil, io.Discard, io.Discard))
	assert.Equal(t, 2, serve(context.Background(), []string{"--latency", "bad"}, io.Discard, io.Discard))
	assert.Equal(t, 2, serve(context.Background(), []string{"--concurrency-limit", "0"}, io.Discard, io.Discard))
	assert.Equal(t, 2, serve(context.Background(), []string{"--daily-request-limit", "-1"}, io.Discard, io.Discard))
}

// TestConcurrencyLimit holds two requests in flight on an emulator limited to two (the
// admitted hook blocks them), then checks the third gets kintone's 429 GAIA_TO04 with the
// concurrency headers, and that a request after the release is served again.
func TestConcurrencyLimit(t *testing.T) {
	f := newFixture(t, Options{ConcurrencyLimit: 2})
	arrived, release := make(chan struct{}), make(chan struct{})
	var hold atomic.Bool
	hold.Store(true)
	f.s.admitted = func() {
		if hold.Load() {
			arrived <- struct{}{}
			<-release
		}
	}
	held := make(chan resp, 2)
	for range 2 {
		go func() { held <- f.c.get("/k/v1/records.json", f.deals.Tokens["read"], url.Values{"app": {f.deals.ID}}) }()
	}
	<-arrived
	<-arrived
	hold.Store(false)
	r := f.c.get("/k/v1/records.json", f.csv.Tokens["read"], url.Values{"app": {f.csv.ID}})
	assert.Equal(t, 429, r.status)
	assert.Equal(t, "GAIA_TO04", r.code())
	assert.Equal(t, "The number of concurrent API requests exceeds the limit.", r.json["message"])
	assert.NotEmpty(t, r.json["id"])
	assert.Equal(t, "GAIA_TO04", r.header.Get("X-Cybozu-Error"))
	assert.Equal(t, "2", r.header.Get("X-ConcurrencyLimit-Limit"))
	assert.Equal(t, "3", r.header.Get("X-ConcurrencyLimit-Running"))
	close(release)
	for range 2 {
		h := <-held
		assert.Equal(t, 200, h.status, "%s", h.body)
		assert.Equal(t, "2", h.header.Get("X-ConcurrencyLimit-Limit"))
		assert.Contains(t, []string{"1", "2"}, h.header.Get("X-ConcurrencyLimit-Running"))
	}
	r = f.c.get("/k/v1/records.json", f.csv.Tokens["read"], url.Values{"app": {f.csv.ID}})
	assert.Equal(t, 200, r.status)
	assert.Equal(t, "1", r.header.Get("X-ConcurrencyLimit-Running"))
	assert.Equal(t, []AppRequests{{AppID: f.csv.ID, Requests: 1}, {AppID: f.deals.ID, Requests: 2}}, sortedByRole(f, f.s.DailyRequests()),
		"the refused request was not counted on its app")
}

// The headers are on every answer, errors included, with kintone's limit of 100 by default.
func TestConcurrencyHeadersOnEveryResponse(t *testing.T) {
	f := newFixture(t, Options{})
	for _, r := range []resp{
		f.c.get("/k/v1/records.json", f.csv.Tokens["read"], url.Values{"app": {f.csv.ID}}),
		f.c.get("/k/v1/records.json", "", url.Values{"app": {f.csv.ID}}),
		f.c.get("/k/v1/nothing.json", f.csv.Tokens["read"], nil),
		f.c.get("/k/v1/file.json", f.csv.Tokens["read"], url.Values{"fileKey": {"none"}}),
	} {
		assert.Equal(t, "100", r.header.Get("X-ConcurrencyLimit-Limit"), "%d %s", r.status, r.body)
		assert.Equal(t, "1", r.header.Get("X-ConcurrencyLimit-Running"), "%d %s", r.status, r.body)
	}
}

// Past the daily limit kintone warns (an e-mail) and keeps serving: so does the emulator, with
// one warning line per app; counts start again on the next kintone day (00:00 UTC).
func TestDailyRequestLimitWarnsAndServes(t *testing.T) {
	warnings := make(warnLines, 10)
	f := newFixture(t, Options{DailyRequestLimit: 2, Warnings: warnings})
	day := time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&day)
	f.s.now = func() time.Time { return *clock.Load() }
	get := func(app AppInfo) resp {
		return f.c.get("/k/v1/records.json", app.Tokens["read"], url.Values{"app": {app.ID}})
	}
	for i := range 4 {
		r := get(f.csv)
		assert.Equal(t, 200, r.status, "request %d is served past the limit", i+1)
	}
	get(f.deals)
	require.Len(t, warnings, 1, "one warning per app and day")
	assert.Contains(t, <-warnings, "daily request limit of app "+f.csv.ID+" (csv) exceeded: request 3 of a limit of 2 on 2026-12-01")
	assert.Equal(t, []AppRequests{{AppID: f.csv.ID, Requests: 4, OverLimit: true}, {AppID: f.deals.ID, Requests: 1}}, sortedByRole(f, f.s.DailyRequests()))

	next := day.Add(2 * time.Minute) // 09:01 JST: kintone's counters were reset at 09:00 JST
	clock.Store(&next)
	assert.Empty(t, f.s.DailyRequests())
	for range 3 {
		get(f.csv)
	}
	require.Len(t, warnings, 1, "the new day warns again")
	assert.Contains(t, <-warnings, "request 3 of a limit of 2 on 2026-12-02")
	// A request without a valid token authenticated no app: it counts on none.
	f.c.get("/k/v1/records.json", "", url.Values{"app": {f.csv.ID}})
	assert.Equal(t, []AppRequests{{AppID: f.csv.ID, Requests: 3, OverLimit: true}}, f.s.DailyRequests())
}

// sortedByRole orders the csv app before deals whatever their ids, for stable comparisons.
func sortedByRole(f *fixture, in []AppRequests) []AppRequests {
	out := append([]AppRequests(nil), in...)
	rank := func(id string) int {
		if id == f.csv.ID {
			return 0
		}
		return 1
	}
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i].AppID) < rank(out[j].AppID) })
	return out
}

// warnLines hands each warning the emulator writes to the test (one Write per line).
type warnLines chan string

func (w warnLines) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

func TestMiscErrorPaths(t *testing.T) {
	f := newFixture(t, Options{})
	up := upload(t, f, "", "a.zip", []byte("x"))
	assert.Equal(t, 401, up.status)
	assert.Equal(t, "CB_AU01", up.code())
	r := f.c.get("/k/v1/records.json", f.csv.Tokens["read"], nil)
	assert.Equal(t, 400, r.status)
	assert.Equal(t, []string{"app"}, r.errKeys())
	r = f.c.get("/k/v1/records.json", f.csv.Tokens["read"], url.Values{"app": {"555"}})
	assert.Equal(t, 404, r.status)
	assert.Equal(t, "GAIA_AP01", r.code())
	r = f.c.get("/k/v1/file.json", f.csv.Tokens["read"], url.Values{"fileKey": {"nope"}})
	assert.Equal(t, 404, r.status)
	assert.Equal(t, "GAIA_BL01", r.code())
	req := mustRequest(t, "GET", f.s.BaseURL()+"/k/v1/record.json", "")
	req.Header.Set("X-Cybozu-Authorization", "dXNlcjpwYXNz")
	r = f.c.send(req)
	assert.Equal(t, 401, r.status)
	assert.Equal(t, "CB_WA01", r.code())

	// A long GET sent as POST with X-HTTP-Method-Override and a JSON body.
	f.addCSV(t, "o1", "")
	req = mustRequest(t, "POST", f.s.BaseURL()+"/k/v1/records.json", `{"app":"`+f.csv.ID+`","query":"test_key in (\"o1\")","totalCount":true}`)
	req.Header.Set("X-HTTP-Method-Override", "GET")
	req.Header.Set("X-Cybozu-API-Token", f.csv.Tokens["read"])
	r = f.c.send(req)
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, "1", r.json["totalCount"])
	// Repeated token headers count as several tokens.
	req = mustRequest(t, "GET", f.s.BaseURL()+"/k/v1/record.json?app="+f.csv.ID+"&id=1", "")
	req.Header.Add("X-Cybozu-API-Token", f.state.Tokens["read"])
	req.Header.Add("X-Cybozu-API-Token", f.csv.Tokens["read"])
	r = f.c.send(req)
	assert.Equal(t, 200, r.status, "%s", r.body)
}

// Started with a pipe from its parent as stdin, the emulator ends when the pipe closes: a
// parent killed without a chance to stop it still takes it along.
func TestServeExitsWhenStdinCloses(t *testing.T) {
	in, inW := io.Pipe()
	old := stdin
	stdin = in
	t.Cleanup(func() { stdin = old })
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := serve(context.Background(), []string{"--exit-on-stdin-eof", "--data-dir", filepath.Join(t.TempDir(), "data")}, pw, &stderr)
		pw.Close()
		done <- code
	}()
	_, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, pr) //nolint:errcheck
	select {
	case code := <-done:
		t.Fatalf("the emulator ended (%d) while its stdin was open", code)
	default:
	}
	require.NoError(t, inW.Close())
	select {
	case code := <-done:
		assert.Equal(t, 0, code)
		assert.Contains(t, stderr.String(), "stdin closed: the parent is gone")
	case <-time.After(10 * time.Second):
		t.Fatal("the emulator did not end within 10 s of its stdin closing")
	}
}
