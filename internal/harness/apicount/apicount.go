// Package apicount counts kintone REST requests per app and method.
//
// kintone budgets requests per app and day (10,000 on the standard plan, kintone-api.md §8),
// so a run must know what it spends: the harness's own reads and writes (internal/harness/kintoneguard
// feeds a Counter through Transport), and FlowNet's and kSQL-Flow's requests seen by the
// proxies in front of them (which count through From(FlowNet) and From(KsqlFlow)). Every
// count also says who sent the request (its origin), so a budget can be spent where it is
// needed. A Counter is safe for concurrent use; a nil *Counter counts nothing, so code that
// may run without counting need not check. Child gives a scenario a counter of its own
// whose requests also count in the run's.
//
// Every request sent counts, whatever its answer: a refused or failed request may still
// have reached the tenant (429s are also counted apart, as Throttled).
package apicount

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// NoApp is the app of a request that names none (and whose token is of no known app).
const NoApp = "-"

// The origins of requests: who sent them.
const (
	// Harness: flowtest's own clients (Add, Transport).
	Harness = "harness"
	// FlowNet: the FlowNet processes, seen by their fault or counting proxies.
	FlowNet = "flownet"
	// KsqlFlow: the kSQL-Flow processes, seen by the scenario's kSQL-Flow proxy.
	KsqlFlow = "ksql-flow"
)

// Counter counts requests per app and method.
type Counter struct {
	parent *Counter
	mu     sync.Mutex
	apps   map[string]*appCounts
}

type appCounts struct {
	methods   map[string]int64
	origins   map[string]int64
	throttled int64
}

// New returns an empty counter.
func New() *Counter { return &Counter{apps: map[string]*appCounts{}} }

// Child returns a new counter whose requests are also counted in c (a scenario's counter
// under the run's). The child of a nil counter counts on its own.
func (c *Counter) Child() *Counter {
	ch := New()
	ch.parent = c
	return ch
}

// Add counts one request of the harness (origin Harness) on app with method (GET, POST,
// PUT, DELETE) that was answered with status (0: no answer, a transport failure). An empty
// app counts as NoApp.
func (c *Counter) Add(app, method string, status int) {
	c.AddFrom(Harness, app, method, status)
}

// AddFrom is Add for a request another origin sent (FlowNet, KsqlFlow).
func (c *Counter) AddFrom(origin, app, method string, status int) {
	if app == "" {
		app = NoApp
	}
	method = strings.ToUpper(method)
	for k := c; k != nil; k = k.parent {
		k.add(origin, app, method, status)
	}
}

// From is c seen as the counter of one origin: its Add counts on c under that origin (a
// proxy is given the counter of the process it stands in front of).
func (c *Counter) From(origin string) *Origin { return &Origin{c: c, name: origin} }

// Origin counts on a Counter under one origin (Counter.From).
type Origin struct {
	c    *Counter
	name string
}

// Add counts one request of the origin, as Counter.Add does.
func (o *Origin) Add(app, method string, status int) { o.c.AddFrom(o.name, app, method, status) }

func (c *Counter) add(origin, app, method string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.apps[app]
	if a == nil {
		a = &appCounts{methods: map[string]int64{}, origins: map[string]int64{}}
		c.apps[app] = a
	}
	a.methods[method]++
	a.origins[origin]++
	if status == http.StatusTooManyRequests {
		a.throttled++
	}
}

// Snapshot is the counts at one moment: app id → its counts. It is plain data (JSON as
// {"<app>": {"requests": n, "by_method": {"GET": n}, "by_origin": {"harness": n},
// "throttled": n}}).
type Snapshot map[string]AppCounts

// AppCounts are one app's counts. ByMethod and ByOrigin each sum to Requests.
type AppCounts struct {
	Requests  int64            `json:"requests"`
	ByMethod  map[string]int64 `json:"by_method"`
	ByOrigin  map[string]int64 `json:"by_origin,omitempty"`
	Throttled int64            `json:"throttled,omitempty"` // answered 429 (sent again by the client's backoff)
}

// Snapshot copies the counts so far (an empty, non-nil map for a nil counter).
func (c *Counter) Snapshot() Snapshot {
	out := Snapshot{}
	if c == nil {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for app, a := range c.apps {
		ac := AppCounts{ByMethod: maps.Clone(a.methods), ByOrigin: maps.Clone(a.origins), Throttled: a.throttled}
		for _, n := range a.methods {
			ac.Requests += n
		}
		out[app] = ac
	}
	return out
}

// Total is the number of requests on every app.
func (s Snapshot) Total() int64 {
	var n int64
	for _, a := range s {
		n += a.Requests
	}
	return n
}

// Apps lists the app keys in order.
func (s Snapshot) Apps() []string { return slices.Sorted(maps.Keys(s)) }

// Plus is the sum of s and o (e.g. the counts of several scenarios, or of two archives).
func (s Snapshot) Plus(o Snapshot) Snapshot {
	return combine(s, o, 1)
}

// Minus is what was counted after before was taken (s minus before), for the share of one
// stretch of a run in a counter that kept counting.
func (s Snapshot) Minus(before Snapshot) Snapshot {
	return combine(s, before, -1)
}

func combine(a, b Snapshot, sign int64) Snapshot {
	out := Snapshot{}
	for _, src := range []struct {
		s    Snapshot
		sign int64
	}{{a, 1}, {b, sign}} {
		for app, c := range src.s {
			acc := out[app]
			if acc.ByMethod == nil {
				acc.ByMethod = map[string]int64{}
			}
			addInto(acc.ByMethod, c.ByMethod, src.sign)
			if len(c.ByOrigin) > 0 {
				if acc.ByOrigin == nil {
					acc.ByOrigin = map[string]int64{}
				}
				addInto(acc.ByOrigin, c.ByOrigin, src.sign)
			}
			acc.Requests += src.sign * c.Requests
			acc.Throttled += src.sign * c.Throttled
			out[app] = acc
		}
	}
	for app, c := range out {
		if len(c.ByOrigin) == 0 {
			c.ByOrigin = nil
			out[app] = c
		}
		if c.Requests == 0 && c.Throttled == 0 {
			delete(out, app)
		}
	}
	return out
}

// addInto adds sign times every count of from into into, dropping counts that become 0.
func addInto(into, from map[string]int64, sign int64) {
	for k, n := range from {
		into[k] += sign * n
		if into[k] == 0 {
			delete(into, k)
		}
	}
}

// Renamed keys the counts by names[app] instead of app ids (archives name apps by role,
// never by id); apps without a name are summed under other.
func (s Snapshot) Renamed(names map[string]string, other string) Snapshot {
	out := Snapshot{}
	for app, c := range s {
		name, ok := names[app]
		if !ok {
			name = other
		}
		out = out.Plus(Snapshot{name: c})
	}
	return out
}

type ctxKey struct{}

// NewContext returns ctx carrying c: a Transport counts a request sent with it on c instead
// of its own counter. A run-wide client (the record cleaner, the evidence reader) is built
// once with the run's counter, yet what it sends for one scenario belongs to that scenario's
// Child.
func NewContext(ctx context.Context, c *Counter) context.Context {
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext is the counter NewContext put in ctx, or nil.
func FromContext(ctx context.Context) *Counter {
	c, _ := ctx.Value(ctxKey{}).(*Counter)
	return c
}

// Transport counts every request sent through next (nil: http.DefaultTransport) on the
// counter of the request's context (NewContext), else on c. The app is found by AppOf;
// tokens maps app id → API token, as kintoneapi.Client.Tokens does, for requests that name
// no app (file uploads).
func Transport(next http.RoundTripper, c *Counter, tokens map[string]string) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	byToken := map[string]string{}
	for app, tok := range tokens {
		for _, t := range strings.Split(tok, ",") {
			byToken[strings.TrimSpace(t)] = app
		}
	}
	return &counting{next: next, c: c, byToken: byToken}
}

type counting struct {
	next    http.RoundTripper
	c       *Counter
	byToken map[string]string
}

func (t *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	app := AppOf(r, t.byToken)
	res, err := t.next.RoundTrip(r)
	status := 0
	if err == nil {
		status = res.StatusCode
	}
	c := FromContext(r.Context())
	if c == nil {
		c = t.c
	}
	c.Add(app, Method(r), status)
	return res, err
}

// Method is the method kintone runs a request as: X-HTTP-Method-Override on a POST, else
// the request's own.
func Method(r *http.Request) string {
	if o := r.Header.Get("X-HTTP-Method-Override"); o != "" && r.Method == http.MethodPost {
		return strings.ToUpper(o)
	}
	return r.Method
}

// AppOf finds the app a kintone request is for: the app (or, for app.json, id) parameter
// of the URL, else the app of a JSON body (a bulk request's first sub-request's), else the
// app whose token it carries (byToken: token → app id). It leaves the body readable: a
// client request's body is read through GetBody, a server request's (a proxy's) is read and
// put back. "" when none tells.
func AppOf(r *http.Request, byToken map[string]string) string {
	q := r.URL.Query()
	if app := q.Get("app"); app != "" {
		return app
	}
	if strings.HasSuffix(r.URL.Path, "/app.json") && q.Get("id") != "" {
		return q.Get("id")
	}
	if app := bodyApp(r); app != "" {
		return app
	}
	for _, v := range r.Header.Values("X-Cybozu-API-Token") {
		for _, t := range strings.Split(v, ",") {
			if app, ok := byToken[strings.TrimSpace(t)]; ok {
				return app
			}
		}
	}
	return ""
}

// maxBodyPeek bounds how much of a body is read to find its app (record writes are small;
// a large body is an upload, which names no app anyway).
const maxBodyPeek = 1 << 20

func bodyApp(r *http.Request) string {
	if r.Body == nil || r.Body == http.NoBody || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		return ""
	}
	var data []byte
	if r.GetBody != nil {
		body, err := r.GetBody()
		if err != nil {
			return ""
		}
		defer body.Close()
		data, _ = io.ReadAll(io.LimitReader(body, maxBodyPeek))
	} else {
		// A server-side request: read it and put back what was read in front of the rest.
		var err error
		data, err = io.ReadAll(io.LimitReader(r.Body, maxBodyPeek))
		r.Body = readCloser{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
		if err != nil {
			return ""
		}
	}
	var b struct {
		App      json.RawMessage `json:"app"`
		Requests []struct {
			Payload struct {
				App json.RawMessage `json:"app"`
			} `json:"payload"`
		} `json:"requests"`
	}
	if json.Unmarshal(data, &b) != nil {
		return ""
	}
	raw := b.App
	if len(raw) == 0 && len(b.Requests) > 0 {
		raw = b.Requests[0].Payload.App
	}
	return strings.Trim(strings.TrimSpace(string(raw)), `"`)
}

type readCloser struct {
	io.Reader
	io.Closer
}
