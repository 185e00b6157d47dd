package faultproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kvUpstream stands in for kintone's record store: a PUT of record.json stores its body
// under the record id, a GET returns it, so a test can see whether a write was applied.
type kvUpstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	recs map[string]string
	puts int
	gets int
}

func newKVUpstream(t *testing.T) *kvUpstream {
	u := &kvUpstream{recs: map[string]string{}}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		defer u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case "PUT":
			var req struct {
				ID json.Number `json:"id"`
			}
			_ = json.Unmarshal(body, &req)
			u.recs[req.ID.String()] = string(body)
			u.puts++
			_, _ = io.WriteString(w, `{"revision":"2"}`)
		case "GET":
			u.gets++
			rec, ok := u.recs[r.URL.Query().Get("id")]
			if !ok {
				w.WriteHeader(404)
				_, _ = io.WriteString(w, `{"code":"GAIA_RE01"}`)
				return
			}
			_, _ = io.WriteString(w, rec)
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *kvUpstream) putCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.puts
}

func (u *kvUpstream) getCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.gets
}

func newKVProxy(t *testing.T, u *kvUpstream, mutate func(*Options)) (*Proxy, *http.Client) {
	opts := Options{Name: "flownet", Upstream: u.srv.URL, LogDir: t.TempDir(), BarrierTimeout: 10 * time.Second}
	if mutate != nil {
		mutate(&opts)
	}
	p, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p, &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

const runPut = `{"app":7,"id":"42","revision":"3","record":{"status":{"value":"ARCHIVED"}}}`

func runPutFault(id string, action Action) Fault {
	return Fault{ID: id, Action: action, Match: FaultMatch{Method: "PUT", Path: `^/k/v1/record\.json$`, App: "7", RecordID: "42", Field: "status"}}
}

// kintoneBody is the decoded shape of a kintone error response.
type kintoneBody struct {
	Code    string                         `json:"code"`
	ID      string                         `json:"id"`
	Message string                         `json:"message"`
	Errors  map[string]map[string][]string `json:"errors"`
}

func TestRespondSendsKintoneErrorWithoutForwarding(t *testing.T) {
	cases := []struct {
		name       string
		fault      Fault
		wantStatus int
		wantCode   string
		wantMsg    string
		wantErrors map[string]map[string][]string
	}{
		{"409 defaults to GAIA_CO02", Fault{Status: 409}, 409, "GAIA_CO02", "The revision is not the latest. Someone may update a record.", nil},
		{"GAIA_DA02 defaults to 400", Fault{Code: "GAIA_DA02"}, 400,
			"GAIA_DA02", "Failed to save the changes because the database could not be locked. Please wait a while and try again.", nil},
		{"CB_VA01 on the matched field is a duplicate", Fault{Code: "CB_VA01"}, 400, "CB_VA01", "Missing or invalid input.",
			map[string]map[string][]string{"record.status.value": {"messages": {"This value already exists in another record."}}}},
		{"CB_VA01 with given errors", Fault{Code: "CB_VA01", Errors: map[string][]string{"record.record_key.value": {"Enter less than 65 characters."}}}, 400,
			"CB_VA01", "Missing or invalid input.", map[string]map[string][]string{"record.record_key.value": {"messages": {"Enter less than 65 characters."}}}},
		{"a code unknown to the table with status and message", Fault{Status: 404, Code: "GAIA_RE20", Message: "no record matches updateKey"}, 404,
			"GAIA_RE20", "no record matches updateKey", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newKVUpstream(t)
			p, c := newKVProxy(t, u, nil)
			f := runPutFault("conflict", ActionRespond)
			f.Status, f.Code, f.Message, f.Errors = tc.fault.Status, tc.fault.Code, tc.fault.Message, tc.fault.Errors
			require.NoError(t, p.AddFault(f))
			var ids []string
			for i := 0; i < 2; i++ {
				f.ID = fmt.Sprintf("again%d", i)
				if i > 0 {
					require.NoError(t, p.AddFault(f))
				}
				r := send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
				require.NoError(t, r.err)
				require.Equal(t, tc.wantStatus, r.status)
				var body kintoneBody
				require.NoError(t, json.Unmarshal([]byte(r.body), &body), r.body)
				assert.Equal(t, tc.wantCode, body.Code)
				assert.Equal(t, tc.wantMsg, body.Message)
				assert.Equal(t, tc.wantErrors, body.Errors)
				assert.Regexp(t, `^[A-Za-z0-9_-]{20}$`, body.ID)
				ids = append(ids, body.ID)
			}
			assert.NotEqual(t, ids[0], ids[1], "every error carries its own id, as kintone's do")
			assert.Zero(t, u.putCount(), "a respond fault never forwards")
			fs := p.FaultFirings("conflict")
			require.Len(t, fs, 1)
			assert.Equal(t, Firing{At: fs[0].At, FaultID: "conflict", Action: ActionRespond, Match: 1, Method: "PUT", Path: "/k/v1/record.json",
				App: "7", RecordID: "42", Status: tc.wantStatus}, fs[0])
			tl := p.Traffic()
			require.Len(t, tl, 2)
			assert.Equal(t, []any{"conflict", ActionRespond, tc.wantStatus}, []any{tl[0].Fault, tl[0].FaultAction, tl[0].Status})
		})
	}
}

func TestRespondServerErrorsAndGivenBodies(t *testing.T) {
	u := newKVUpstream(t)
	p, c := newKVProxy(t, u, nil)
	require.NoError(t, p.AddFault(Fault{ID: "down", Action: ActionRespond, Status: 503}))
	r := send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
	require.NoError(t, r.err)
	assert.Equal(t, 503, r.status)
	assert.Equal(t, "503 Service Unavailable", r.body, "kintone's outage answers are not JSON")

	require.NoError(t, p.AddFault(Fault{ID: "internal", Action: ActionRespond, Status: 500, Body: `{"code":"X","message":"m"}`}))
	r = send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
	require.NoError(t, r.err)
	assert.Equal(t, 500, r.status)
	assert.Equal(t, `{"code":"X","message":"m"}`, r.body, "a given body is sent verbatim")

	require.NoError(t, p.AddFault(Fault{ID: "coded", Action: ActionRespond, Status: 500, Code: "CB_IL02", Message: "internal"}))
	r = send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
	require.NoError(t, r.err)
	var body kintoneBody
	require.NoError(t, json.Unmarshal([]byte(r.body), &body))
	assert.Equal(t, []any{500, "CB_IL02", "internal"}, []any{r.status, body.Code, body.Message})

	r = send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status, "each fault fired once")
	assert.Equal(t, 1, u.putCount())

	// A read answered in kintone's stead: the given body with its status, not forwarded.
	answer := `{"records":[],"totalCount":null}`
	require.NoError(t, p.AddFault(Fault{ID: "answer", Match: FaultMatch{Method: "GET"}, Action: ActionRespond, Status: 200, Body: answer}))
	r = send(c, "GET", p.URL()+"/k/v1/records.json?app=7", "", nil)
	require.NoError(t, r.err)
	assert.Equal(t, []any{200, answer}, []any{r.status, r.body})
	assert.Equal(t, 0, u.getCount(), "the answered read never reached the upstream")
	assert.Len(t, p.FaultFirings("answer"), 1)
}

// The write a lost response carried is applied on the upstream, though the client saw
// only a dropped connection.
func TestLoseResponseAppliesTheWriteAndDropsTheConnection(t *testing.T) {
	u := newKVUpstream(t)
	p, c := newKVProxy(t, u, nil)
	require.NoError(t, p.AddFault(runPutFault("lost", ActionLoseResponse)))

	requireNetworkError(t, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil))
	fs := p.FaultFirings("lost")
	require.Len(t, fs, 1, "the firing is recorded before the client sees the drop")
	assert.Equal(t, ActionLoseResponse, fs[0].Action)
	assert.Equal(t, 200, fs[0].Status, "the upstream's answer to the write the client never heard of")
	assert.Empty(t, fs[0].Error)

	r := send(c, "GET", p.URL()+"/k/v1/record.json?app=7&id=42", "", nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)
	assert.Equal(t, runPut, r.body, "the write is visible on the upstream afterwards")
	assert.Equal(t, 1, u.putCount())

	p.FlushLogs()
	lines := readLines(t, p.TrafficLogPath())
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], `"status":200`)
	assert.Contains(t, lines[0], `"fault":"lost","fault_action":"lose-response"`)
	assert.NotContains(t, lines[1], `"fault"`)
}

func TestResetDropsOneRequestBeforeForwarding(t *testing.T) {
	u := newKVUpstream(t)
	p, c := newKVProxy(t, u, nil)
	require.NoError(t, p.AddFault(runPutFault("reset", ActionReset)))
	requireNetworkError(t, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil))
	assert.Zero(t, u.putCount(), "a reset request never reaches the upstream")
	r := send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status, "only one request is reset, the mode stays pass")
	assert.Equal(t, ModePass, p.Mode())
	assert.Len(t, p.FaultFirings("reset"), 1)
	assert.Equal(t, 1, u.putCount())
}

func TestDelayHoldsThenForwards(t *testing.T) {
	u := newKVUpstream(t)
	p, c := newKVProxy(t, u, nil)
	f := runPutFault("slow", ActionDelay)
	f.Delay = 30 * time.Millisecond
	require.NoError(t, p.AddFault(f))
	start := time.Now()
	r := send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)
	assert.GreaterOrEqual(t, time.Since(start), f.Delay, "a timer never fires early")
	assert.Equal(t, 1, u.putCount())
	assert.Len(t, p.FaultFirings("slow"), 1)
}

// A delay is a hold like a barrier's: closing the proxy ends it, and the request is
// dropped without reaching the upstream.
func TestDelayEndsWhenTheProxyCloses(t *testing.T) {
	u := newKVUpstream(t)
	p, c := newKVProxy(t, u, func(o *Options) { o.BarrierTimeout = 5 * time.Minute })
	f := runPutFault("stuck", ActionDelay)
	f.Delay = 4 * time.Minute
	require.NoError(t, p.AddFault(f))
	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.WaitFirings(ctx, "stuck", 1)
	require.NoError(t, err)
	require.NoError(t, p.Close())
	requireNetworkError(t, recv(t, ch))
	assert.Zero(t, u.putCount())
	data, err := os.ReadFile(p.TrafficLogPath())
	require.NoError(t, err)
	assert.Contains(t, string(data), "fault stuck: proxy closed while delayed")
}

func TestNthMatchingRequestAndTimes(t *testing.T) {
	cases := []struct {
		name  string
		nth   int
		times int
		want  []int // status of each of six matching requests
	}{
		{"once by default", 0, 0, []int{409, 200, 200, 200, 200, 200}},
		{"the second, twice", 2, 2, []int{200, 409, 409, 200, 200, 200}},
		{"from the third, always", 3, Always, []int{200, 200, 409, 409, 409, 409}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newKVUpstream(t)
			p, c := newKVProxy(t, u, nil)
			f := runPutFault("f", ActionRespond)
			f.Status, f.Match.Nth, f.Times = 409, tc.nth, tc.times
			require.NoError(t, p.AddFault(f))
			var got, matches []int
			for i := range tc.want {
				// A request for another app between the matching ones never counts.
				other := send(c, "PUT", p.URL()+"/k/v1/record.json", strings.Replace(runPut, `"app":7`, `"app":8`, 1), nil)
				require.Equal(t, 200, other.status, "request %d", i)
				r := send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
				require.NoError(t, r.err)
				got = append(got, r.status)
			}
			assert.Equal(t, tc.want, got)
			for _, fr := range p.FaultFirings("f") {
				matches = append(matches, fr.Match)
			}
			var wantMatches []int
			for i, s := range tc.want {
				if s == 409 {
					wantMatches = append(wantMatches, i+1)
				}
			}
			assert.Equal(t, wantMatches, matches, "each firing says which matching request it took")
		})
	}
}

// At most one fault acts on a request; a second one whose window includes it keeps its
// firing for a later match.
func TestFirstFaultTakesTheRequest(t *testing.T) {
	u := newKVUpstream(t)
	p, c := newKVProxy(t, u, nil)
	require.NoError(t, p.AddFault(Fault{ID: "first", Action: ActionRespond, Status: 409}))
	require.NoError(t, p.AddFault(Fault{ID: "second", Action: ActionRespond, Code: "GAIA_DA02"}))
	assert.Equal(t, 409, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil).status)
	assert.Equal(t, 400, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil).status)
	assert.Equal(t, 200, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil).status)
	fs := p.Firings()
	require.Len(t, fs, 2)
	assert.Equal(t, []any{"first", 1, "second", 2}, []any{fs[0].FaultID, fs[0].Match, fs[1].FaultID, fs[1].Match})

	require.NoError(t, p.AddFault(Fault{ID: "gone", Action: ActionReset}))
	require.NoError(t, p.RemoveFault("gone"))
	assert.Equal(t, 200, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil).status, "a removed fault never fires")
	assert.Error(t, p.AddFault(Fault{ID: "gone", Action: ActionReset}), "a removed fault's id stays taken")
	assert.Error(t, p.RemoveFault("never"))
}

func TestFaultMatchRules(t *testing.T) {
	full := FaultMatch{Method: "PUT", Path: `^/k/v1/records?\.json$`, App: "7", RecordID: "42", Field: "status"}
	cases := []struct {
		name        string
		m           FaultMatch
		method, url string
		body        string
		want        bool
	}{
		{"all conditions on a single PUT", full, "PUT", "/k/v1/record.json", runPut, true},
		{"numeric id and string app", full, "PUT", "/k/v1/record.json", `{"app":"7","id":42,"record":{"status":{}}}`, true},
		{"bulk: id and field in records[]", full, "PUT", "/k/v1/records.json",
			`{"app":7,"records":[{"id":1,"record":{"x":{}}},{"id":"42","record":{"status":{}}}]}`, true},
		{"bulk: field in another record still counts", full, "PUT", "/k/v1/records.json",
			`{"app":7,"records":[{"id":42,"record":{"x":{}}},{"id":43,"record":{"status":{}}}]}`, true},
		{"other record", full, "PUT", "/k/v1/record.json", `{"app":7,"id":43,"record":{"status":{}}}`, false},
		{"other app", full, "PUT", "/k/v1/record.json", `{"app":8,"id":42,"record":{"status":{}}}`, false},
		{"field absent", full, "PUT", "/k/v1/record.json", `{"app":7,"id":42,"record":{"owner":{}}}`, false},
		{"field nested deeper", full, "PUT", "/k/v1/record.json", `{"app":7,"id":42,"record":{"x":{"status":1}}}`, false},
		{"other method", full, "POST", "/k/v1/record.json", runPut, false},
		{"other path", full, "PUT", "/k/v1/file.json", runPut, false},
		{"non-JSON body", full, "PUT", "/k/v1/record.json", `status 42`, false},
		{"a GET names app and id in the query", FaultMatch{Method: "get", App: "7", RecordID: "42"}, "GET", "/k/v1/record.json?app=7&id=42", "", true},
		{"a GET for another id", FaultMatch{RecordID: "42"}, "GET", "/k/v1/record.json?app=7&id=4", "", false},
		{"a delete's ids", FaultMatch{Method: "DELETE", RecordID: "42"}, "DELETE", "/k/v1/records.json", `{"app":7,"ids":["41",42]}`, true},
		{"a bulk POST's field", FaultMatch{Method: "POST", Field: "record_key"}, "POST", "/k/v1/records.json", `{"app":9,"records":[{"record_key":{"value":"k"}}]}`, false},
		{"a bulk POST's records[].record field", FaultMatch{Method: "POST", Field: "record_key"}, "POST", "/k/v1/records.json", `{"app":9,"records":[{"record":{"record_key":{"value":"k"}}}]}`, true},
		{"empty matcher matches all", FaultMatch{}, "PATCH", "/anything", "", true},
		{"a PUT by updateKey", FaultMatch{Method: "PUT", RecordKey: "R1:abc"}, "PUT", "/k/v1/record.json", `{"app":7,"updateKey":{"field":"record_key","value":"R1:abc"},"record":{}}`, true},
		{"a PUT by another key", FaultMatch{Method: "PUT", RecordKey: "R1:abc"}, "PUT", "/k/v1/record.json", `{"app":7,"updateKey":{"field":"record_key","value":"R1:x"},"record":{}}`, false},
		{"a key is not an id", FaultMatch{RecordKey: "42"}, "PUT", "/k/v1/record.json", `{"app":7,"id":42,"record":{}}`, false},
		{"bulk: one records[].updateKey", FaultMatch{RecordKey: "R1:abc"}, "PUT", "/k/v1/records.json",
			`{"app":7,"records":[{"id":1,"record":{}},{"updateKey":{"field":"record_key","value":"R1:abc"},"record":{}}]}`, true},
		{"id or key: by id", FaultMatch{RecordID: "42", RecordKey: "R1:abc"}, "PUT", "/k/v1/record.json", `{"app":7,"id":"42","record":{}}`, true},
		{"id or key: by key", FaultMatch{RecordID: "42", RecordKey: "R1:abc"}, "PUT", "/k/v1/record.json", `{"app":7,"updateKey":{"field":"record_key","value":"R1:abc"},"record":{}}`, true},
		{"id or key: neither", FaultMatch{RecordID: "42", RecordKey: "R1:abc"}, "PUT", "/k/v1/record.json", `{"app":7,"id":43,"record":{}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := compileFault(Fault{ID: "f", Action: ActionReset, Match: tc.m})
			require.NoError(t, err)
			req := httptest.NewRequest(tc.method, tc.url, nil)
			v := &requestView{method: tc.method, path: req.URL.Path, query: req.URL.Query()}
			if tc.body != "" {
				v.body = []byte(tc.body)
			}
			assert.Equal(t, tc.want, c.matches(v))
		})
	}
}

// "The n-th write" of a client, whichever verb each write uses: POST and PUT count, a read
// does not — neither a GET nor a POST that kintone runs as GET (X-HTTP-Method-Override) —
// and neither does a write to another app. The synthetic answer is not counted as sent.
func TestNthWriteTakesWritesAsKintoneRunsThem(t *testing.T) {
	u := newKVUpstream(t)
	counted := &recordingCounter{}
	p, c := newKVProxy(t, u, func(o *Options) { o.Counter = counted })
	require.NoError(t, p.AddFault(Fault{ID: "second-write", Action: ActionRespond, Status: 400, Code: "CSV1_FAULT", Message: "synthetic write fault",
		Match: FaultMatch{Path: `^/k/v1/records?\.json$`, App: "7", Write: true, Nth: 2}}))
	override := map[string]string{"X-HTTP-Method-Override": "GET"}
	steps := []struct {
		method, path, body string
		hdr                map[string]string
		want               int
	}{
		{"POST", "/k/v1/records.json", `{"app":7,"records":[{"k":{"value":"1"}}]}`, nil, 200},   // write 1
		{"POST", "/k/v1/records.json", `{"app":7,"query":"limit 1"}`, override, 200},            // a read
		{"GET", "/k/v1/records.json?app=7", "", nil, 404},                                       // a read (the upstream has no record 0)
		{"PUT", "/k/v1/records.json", `{"app":8,"records":[{"id":1,"record":{}}]}`, nil, 200},   // another app
		{"PUT", "/k/v1/records.json", `{"app":"7","records":[{"id":1,"record":{}}]}`, nil, 400}, // write 2
		{"PUT", "/k/v1/record.json", `{"app":7,"id":"1","record":{}}`, nil, 200},                // write 3: once
	}
	for i, st := range steps {
		r := send(c, st.method, p.URL()+st.path, st.body, st.hdr)
		require.NoError(t, r.err, "request %d", i+1)
		assert.Equal(t, st.want, r.status, "request %d: %s %s", i+1, st.method, st.path)
		if st.want == 400 {
			var b kintoneBody
			require.NoError(t, json.Unmarshal([]byte(r.body), &b))
			assert.Equal(t, []string{"CSV1_FAULT", "synthetic write fault"}, []string{b.Code, b.Message})
		}
	}
	fs := p.FaultFirings("second-write")
	require.Len(t, fs, 1)
	assert.Equal(t, []any{2, "PUT", "7", 400}, []any{fs[0].Match, fs[0].Method, fs[0].App, fs[0].Status})
	assert.Len(t, counted.list(), 5, "the synthetic 400 never reached the tenant")

	c2, err := parseFileFault([]byte(`{"id":"w","action":"reset","match":{"write":true,"nth":3}}`))
	require.NoError(t, err)
	assert.Equal(t, FaultMatch{Write: true, Nth: 3}, c2.f.Match, "the control file names it match.write")
}

func TestAddFaultRefusesBadInputNamingTheProblem(t *testing.T) {
	u := newKVUpstream(t)
	p, _ := newKVProxy(t, u, nil)
	require.NoError(t, p.AddFault(Fault{ID: "taken", Action: ActionReset}))
	cases := []struct {
		f    Fault
		want string
	}{
		{Fault{Action: ActionReset}, "fault id is empty"},
		{Fault{ID: "taken", Action: ActionReset}, "fault taken: id already used"},
		{Fault{ID: "a", Action: "explode"}, `fault a: unknown action "explode" (want respond, lose-response, reset or delay)`},
		{Fault{ID: "a", Action: ActionReset, Match: FaultMatch{Path: "("}}, "fault a: match.path: error parsing regexp"},
		{Fault{ID: "a", Action: ActionReset, Match: FaultMatch{Method: "P UT"}}, `fault a: match.method "P UT" is not an HTTP method`},
		{Fault{ID: "a", Action: ActionReset, Match: FaultMatch{Nth: -1}}, "fault a: match.nth -1 is negative"},
		{Fault{ID: "a", Action: ActionReset, Times: -2}, "fault a: times -2"},
		{Fault{ID: "a", Action: ActionReset, Status: 409}, "fault a: status, code, message, errors and body are only for the respond action, not reset"},
		{Fault{ID: "a", Action: ActionRespond, Status: 409, Delay: time.Second}, "fault a: delay is only for the delay action"},
		{Fault{ID: "a", Action: ActionDelay}, "fault a: delay action needs a positive delay"},
		{Fault{ID: "a", Action: ActionDelay, Delay: time.Hour}, "fault a: delay 1h0m0s exceeds the proxy's hold bound 10s"},
		{Fault{ID: "a", Action: ActionRespond}, "fault a: respond needs a status or a code"},
		{Fault{ID: "a", Action: ActionRespond, Status: 400}, "fault a: respond: status 400 needs a code"},
		{Fault{ID: "a", Action: ActionRespond, Status: 200}, "fault a: respond: status 200 is not an error status (400-599); a 2xx answer needs its body"},
		{Fault{ID: "a", Action: ActionRespond, Status: 200, Code: "CB_VA01", Body: "{}"}, "fault a: respond: status 200 is not an error status (400-599); a 2xx answer needs its body and no code"},
		{Fault{ID: "a", Action: ActionRespond, Status: 302, Body: "{}"}, "fault a: respond: status 302 is not an error status (400-599), nor a 2xx answer"},
		{Fault{ID: "a", Action: ActionRespond, Code: "GAIA_XX99"}, `fault a: respond: unknown kintone code "GAIA_XX99" needs its status`},
		{Fault{ID: "a", Action: ActionRespond, Status: 404, Code: "GAIA_XX99"}, `fault a: respond: unknown kintone code "GAIA_XX99" needs a message`},
		{Fault{ID: "a", Action: ActionRespond, Code: "CB_VA01"}, "fault a: respond CB_VA01 needs errors"},
	}
	for _, tc := range cases {
		err := p.AddFault(tc.f)
		if assert.Error(t, err, "%+v", tc.f) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	assert.Empty(t, p.FaultFirings("a"))
}

// A barrier holds the request first; once released, the fault acts on it.
func TestBarrierAndFaultComposeOnOneRequest(t *testing.T) {
	for _, phase := range []Phase{PhaseBefore, PhaseAfterSuccess} {
		t.Run(string(phase), func(t *testing.T) {
			u := newKVUpstream(t)
			p, c := newKVProxy(t, u, nil)
			require.NoError(t, p.AddBarrier(Barrier{ID: "hold", Phase: phase, Match: Match{Path: claimPath, Method: "PUT", App: "7"}}))
			require.NoError(t, p.AddFault(runPutFault("lost", ActionLoseResponse)))
			ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil)
			arrived(t, p, "hold")
			if phase == PhaseBefore {
				assert.Zero(t, u.putCount(), "held before forwarding")
			} else {
				assert.Equal(t, 1, u.putCount(), "held after the upstream applied it")
			}
			assert.Empty(t, p.FaultFirings("lost"), "the fault waits for the barrier")
			require.NoError(t, p.Release("hold"))
			requireNetworkError(t, recv(t, ch))
			assert.Equal(t, 1, u.putCount())
			fs := p.FaultFirings("lost")
			require.Len(t, fs, 1)
			assert.Equal(t, 200, fs[0].Status)
			assert.Len(t, p.Arrivals(), 1)
		})
	}
}

// A fault that took a request whose barrier then timed out records that it did not act.
func TestFaultNotAppliedWhenTheBarrierFails(t *testing.T) {
	u := newKVUpstream(t)
	p, c := newKVProxy(t, u, func(o *Options) { o.BarrierTimeout = 20 * time.Millisecond })
	require.NoError(t, p.AddBarrier(Barrier{ID: "never", Phase: PhaseBefore, Match: Match{Path: claimPath}}))
	require.NoError(t, p.AddFault(runPutFault("reset", ActionReset)))
	requireNetworkError(t, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil))
	fs := p.Firings()
	require.Len(t, fs, 1)
	assert.Equal(t, "reset", fs[0].FaultID)
	assert.Equal(t, "not applied: barrier never: release timed out after 20ms", fs[0].Error)
}

func TestControlFileFaults(t *testing.T) {
	u := newKVUpstream(t)
	ctl := filepath.Join(t.TempDir(), "fault-control.txt")
	p, c := newKVProxy(t, u, func(o *Options) { o.ControlFile = ctl })
	content := `{"mode":"pass","faults":[
		{"id":"busy","action":"respond","code":"GAIA_DA02","times":2,"match":{"method":"PUT","path":"^/k/v1/record\\.json$","app":7,"record_id":42,"field":"status"}},
		{"id":"typo","action":"reset","match":{"recordid":42}},
		{"id":"boom","action":"explode"},
		{"id":"flat","action":"reset","match":"PUT"},
		{"id":"slow","action":"delay","delay":"soon"},
		{"id":"many","action":"reset","times":"often"},
		{"id":"busy","action":"reset"}
	]}`
	require.NoError(t, os.WriteFile(ctl, []byte(content), 0o644))
	probs := p.ControlProblems()
	require.Len(t, probs, 6, "%q", probs)
	for i, want := range []string{
		`faults[1]: fault typo: json: unknown field "recordid"`,
		`faults[2]: fault boom: unknown action "explode"`,
		`faults[3]: fault flat: json: cannot unmarshal string`,
		`faults[4]: fault slow: delay "soon" is not a duration`,
		`faults[5]: fault many: times "often"`,
		`faults[6]: fault busy: id repeated`,
	} {
		assert.Contains(t, probs[i], want)
	}
	err := ValidateControl([]byte(content))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "recordid"`)
	require.NoError(t, ValidateControl([]byte(`{"mode":"block-writes","faults":[{"id":"x","action":"reset"}]}`)))
	assert.ErrorContains(t, ValidateControl([]byte("drain")), `unknown fault mode "drain"`)

	var got []int
	for i := 0; i < 3; i++ {
		got = append(got, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil).status)
	}
	assert.Equal(t, []int{400, 400, 200}, got)
	fs := p.FaultFirings("busy")
	require.Len(t, fs, 2)
	assert.Equal(t, []string{"7", "42"}, []string{fs[0].App, fs[0].RecordID})

	// Rewriting the file keeps the counts of a fault by id; a new id arms afresh.
	require.NoError(t, os.WriteFile(ctl, []byte(strings.Replace(content, `"times":2`, `"times":3`, 1)), 0o644))
	assert.Equal(t, 400, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil).status)
	assert.Equal(t, 200, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil).status)
	require.NoError(t, os.WriteFile(ctl, []byte(`{"faults":[{"id":"lost","action":"lose-response","times":"always"}]}`), 0o644))
	requireNetworkError(t, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil))
	requireNetworkError(t, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil))
	assert.Empty(t, p.ControlProblems())
	require.NoError(t, p.AddFault(Fault{ID: "mine", Action: ActionReset, Match: FaultMatch{Method: "DELETE"}}))
	require.NoError(t, os.WriteFile(ctl, []byte(`{"faults":[{"id":"mine","action":"reset"}]}`), 0o644))
	assert.Equal(t, []string{"fault mine: id is taken by a fault added in-process"}, p.ControlProblems())
	require.NoError(t, os.Remove(ctl))
	assert.Equal(t, 200, send(c, "PUT", p.URL()+"/k/v1/record.json", runPut, nil).status, "a removed file disarms its faults")
}

func TestWaitFiringsTimeoutNamesTheFault(t *testing.T) {
	u := newKVUpstream(t)
	p, _ := newKVProxy(t, u, nil)
	require.NoError(t, p.AddFault(runPutFault("idle", ActionReset)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := p.WaitFirings(ctx, "idle", 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fault idle")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// The control file names a record by updateKey as the in-process API does: a barrier's
// body.key, a fault's match.record_key (strings or numbers, like ids).
func TestControlFileNamesARecordByItsKey(t *testing.T) {
	b, err := parseFileBarrier([]byte(`{"id":"b","phase":"before","match":{"path":".","body":{"id":5,"key":"R1:abc"}}}`))
	require.NoError(t, err)
	assert.Equal(t, BodyMatch{ID: "5", Key: "R1:abc"}, *b.b.Match.Body)
	f, err := parseFileFault([]byte(`{"id":"f","action":"reset","match":{"record_id":5,"record_key":"R1:abc"}}`))
	require.NoError(t, err)
	assert.Equal(t, "5", f.f.Match.RecordID)
	assert.Equal(t, "R1:abc", f.f.Match.RecordKey)
}
