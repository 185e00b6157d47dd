package flownet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// faultFront is a plain-HTTP front in front of the sandbox's kintone emulator: FlowNet is
// pointed at it (KSQL_FLOWNET_BASE_URL) and every request is forwarded unless a fault rule
// matches. A rule's action answers for kintone, forwards and then drops the connection (a
// lost response: kintone applied the write, the client cannot know), or drops it before
// forwarding. Rules fire a given number of times, in the order they were added.
type faultFront struct {
	t        testing.TB
	srv      *httptest.Server
	upstream string
	hc       *http.Client

	mu    sync.Mutex
	rules []*faultRule
	log   []frontRequest // every request, in arrival order
}

// count is how many requests so far match m.
func (f *faultFront) count(m func(frontRequest) bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.log {
		if m(r) {
			n++
		}
	}
	return n
}

// frontRequest is what a matcher sees: the request and its decoded JSON body (nil for a GET).
type frontRequest struct {
	method, path string
	query        url.Values
	body         map[string]any
}

// record returns the "record" object of a write's body.
func (r frontRequest) record() map[string]any {
	rec, _ := r.body["record"].(map[string]any)
	return rec
}

// field is the value of a field under record, and whether the write sets it.
func (r frontRequest) field(code string) (string, bool) {
	f, ok := r.record()[code].(map[string]any)
	if !ok {
		return "", false
	}
	return fmt.Sprint(f["value"]), true
}

func (r frontRequest) app() string {
	if r.body != nil {
		return fmt.Sprint(r.body["app"])
	}
	return r.query.Get("app")
}

type faultRule struct {
	name  string
	match func(frontRequest) bool
	act   frontAction
	left  int // firings left; a negative count fires always
	fired int
}

// frontAction handles a matched request. forward sends it to the emulator and returns the
// emulator's status and body.
type frontAction func(w http.ResponseWriter, r frontRequest, forward func() (int, []byte))

func newFaultFront(t testing.TB, s *sandbox) *faultFront {
	t.Helper()
	hc, err := kintoneapi.HTTPClientWithCA(s.srv.CAFile())
	require.NoError(t, err)
	f := &faultFront{t: t, upstream: s.srv.BaseURL(), hc: hc}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	for i, kv := range s.environ {
		if strings.HasPrefix(kv, "KSQL_FLOWNET_BASE_URL=") {
			s.environ[i] = "KSQL_FLOWNET_BASE_URL=" + f.srv.URL
		}
	}
	return f
}

// on adds a rule that fires times times (negative: always).
func (f *faultFront) on(name string, times int, match func(frontRequest) bool, act frontAction) *faultRule {
	r := &faultRule{name: name, match: match, act: act, left: times}
	f.mu.Lock()
	f.rules = append(f.rules, r)
	f.mu.Unlock()
	return r
}

// firings is how often the named rule fired.
func (f *faultFront) firings(r *faultRule) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return r.fired
}

func (f *faultFront) serve(w http.ResponseWriter, req *http.Request) {
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	fr := frontRequest{method: req.Method, path: req.URL.Path, query: req.URL.Query()}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &fr.body)
	}
	forward := func() (int, []byte) {
		up, err := http.NewRequestWithContext(req.Context(), req.Method, f.upstream+req.URL.RequestURI(), bytes.NewReader(raw))
		if err != nil {
			return http.StatusBadGateway, []byte(err.Error())
		}
		up.Header = req.Header.Clone()
		resp, err := f.hc.Do(up)
		if err != nil {
			return http.StatusBadGateway, []byte(err.Error())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	f.mu.Lock()
	f.log = append(f.log, fr)
	var act frontAction
	for _, r := range f.rules {
		if r.left != 0 && r.match(fr) {
			r.left--
			r.fired++
			act = r.act
			break
		}
	}
	f.mu.Unlock()
	if act == nil {
		act = passThrough
	}
	act(w, fr, forward)
}

func passThrough(w http.ResponseWriter, _ frontRequest, forward func() (int, []byte)) {
	status, body := forward()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// respond answers for kintone without forwarding, with a kintone-style error body.
func respond(status int, code, message string, errs map[string]any) frontAction {
	return func(w http.ResponseWriter, _ frontRequest, _ func() (int, []byte)) {
		body := map[string]any{"code": code, "id": "fault-front", "message": message}
		if errs != nil {
			body["errors"] = errs
		}
		b, _ := json.Marshal(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
}

// loseResponse forwards, runs then (when set) once kintone has answered, and drops the
// connection instead of returning the answer.
func loseResponse(then func()) frontAction {
	return func(w http.ResponseWriter, _ frontRequest, forward func() (int, []byte)) {
		forward()
		if then != nil {
			then()
		}
		hangUp(w)
	}
}

// afterForward forwards, runs hook once kintone has answered, then returns the answer (a
// competing write landing right after ours, say).
func afterForward(hook func()) frontAction {
	return func(w http.ResponseWriter, r frontRequest, forward func() (int, []byte)) {
		status, body := forward()
		hook()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

// reset drops the connection without forwarding: nothing reached kintone.
func reset(w http.ResponseWriter, _ frontRequest, _ func() (int, []byte)) { hangUp(w) }

// before runs hook, then forwards as usual (a competing write landing first, say).
func before(hook func()) frontAction {
	return func(w http.ResponseWriter, r frontRequest, forward func() (int, []byte)) {
		hook()
		passThrough(w, r, forward)
	}
}

func hangUp(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(fmt.Sprintf("fault front: hijack: %v", err))
	}
	_ = conn.Close()
}

// Matchers.

func isRecordWrite(method string) func(frontRequest) bool {
	return func(r frontRequest) bool { return r.method == method && r.path == "/k/v1/record.json" }
}

// writesField matches a single-record write whose record sets field.
func writesField(method, field string) func(frontRequest) bool {
	return func(r frontRequest) bool {
		_, ok := r.field(field)
		return isRecordWrite(method)(r) && ok
	}
}

// writesKeyPrefix matches a single-record write whose record_key starts with prefix.
func writesKeyPrefix(method, prefix string) func(frontRequest) bool {
	return func(r frontRequest) bool {
		k, ok := r.field("record_key")
		return isRecordWrite(method)(r) && ok && strings.HasPrefix(k, prefix)
	}
}

// readsWith matches a records.json GET whose query contains s.
func readsWith(s string) func(frontRequest) bool {
	return func(r frontRequest) bool {
		return r.method == http.MethodGet && r.path == "/k/v1/records.json" && strings.Contains(r.query.Get("query"), s)
	}
}

// updateKeyOf is the value of the body's updateKey ("" for a write by id).
func (r frontRequest) updateKeyOf() string {
	uk, ok := r.body["updateKey"].(map[string]any)
	if !ok {
		return ""
	}
	return fmt.Sprint(uk["value"])
}

// updatesKey matches a PUT of the record of app whose record_key is key, by updateKey (how
// FlowNet writes its own records).
func updatesKey(app, key string) func(frontRequest) bool {
	return func(r frontRequest) bool {
		return isRecordWrite(http.MethodPut)(r) && r.app() == app && r.updateKeyOf() == key
	}
}

// updatesRecord matches a PUT of record id of app.
func updatesRecord(app, id string) func(frontRequest) bool {
	return func(r frontRequest) bool {
		return isRecordWrite(http.MethodPut)(r) && r.app() == app && fmt.Sprint(r.body["id"]) == id
	}
}
