package faultproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Mode is what the proxy does with requests.
type Mode string

const (
	ModePass        Mode = "pass"
	ModeBlock       Mode = "block"
	ModeBlockWrites Mode = "block-writes"
)

// ParseMode accepts pass, block and block-writes (surrounding space ignored).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case ModePass, ModeBlock, ModeBlockWrites:
		return m, nil
	}
	return "", fmt.Errorf("unknown fault mode %q (want pass, block or block-writes)", s)
}

func (m Mode) blocks(method string) bool {
	switch m {
	case ModeBlock:
		return true
	case ModeBlockWrites:
		return method != "GET"
	}
	return false
}

// Phase is when a barrier holds its request.
type Phase string

const (
	// PhaseBefore holds the request before it is forwarded.
	PhaseBefore Phase = "before"
	// PhaseAfterSuccess forwards the request and holds a 2xx response.
	PhaseAfterSuccess Phase = "after-success"
)

// BodyMatch conditions a barrier on the request's JSON body. Empty fields are not checked.
type BodyMatch struct {
	App   string `json:"app,omitempty"`   // top-level "app", string-compared
	ID    string `json:"id,omitempty"`    // top-level "id", string-compared
	Field string `json:"field,omitempty"` // must be a key of the top-level "record" object
}

func (b *BodyMatch) empty() bool { return b == nil || (b.App == "" && b.ID == "" && b.Field == "") }

// Match selects the requests a barrier applies to.
type Match struct {
	Path   string `json:"path"`             // regexp on the URL path (no query)
	Method string `json:"method,omitempty"` // e.g. PUT; "" = any
	// App is the app the request addresses, wherever the client put it: the JSON body's
	// top-level "app", else the "app" query parameter. A read is a GET with its
	// parameters in the query string, or (kintone's X-HTTP-Method-Override for long
	// queries, a cursor's creation) a POST with a JSON body; App matches either.
	App  string     `json:"app,omitempty"`
	Body *BodyMatch `json:"body,omitempty"`
}

// Barrier holds one matching request until released. See the package comment.
type Barrier struct {
	ID    string `json:"id"`
	Phase Phase  `json:"phase"`
	// Release is an optional file whose creation releases the barrier (for operators
	// and other processes); Release(id) works either way.
	Release string `json:"release,omitempty"`
	Match   Match  `json:"match"`
}

// Arrival records a request held at a barrier.
type Arrival struct {
	At        time.Time `json:"at"`
	BarrierID string    `json:"barrier_id"`
	Phase     Phase     `json:"phase"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	// ResponseStatus is the upstream status held by an after-success barrier (0 for before).
	ResponseStatus int `json:"response_status,omitempty"`
}

// compiled is a validated barrier ready for matching.
type compiled struct {
	b      Barrier
	re     *regexp.Regexp
	method string
}

func compile(b Barrier) (*compiled, error) {
	if strings.TrimSpace(b.ID) == "" {
		return nil, errors.New("barrier id is empty")
	}
	if b.Phase != PhaseBefore && b.Phase != PhaseAfterSuccess {
		return nil, fmt.Errorf("barrier %s: phase %q (want before or after-success)", b.ID, b.Phase)
	}
	if b.Match.Path == "" {
		return nil, fmt.Errorf("barrier %s: match.path is empty", b.ID)
	}
	re, err := regexp.Compile(b.Match.Path)
	if err != nil {
		return nil, fmt.Errorf("barrier %s: match.path: %w", b.ID, err)
	}
	return &compiled{b: b, re: re, method: strings.ToUpper(strings.TrimSpace(b.Match.Method))}, nil
}

// requestView is what matching sees of a request.
type requestView struct {
	method string
	path   string
	query  url.Values
	body   []byte // nil when not buffered (too large, multipart, GET)
	parsed bool
	obj    map[string]json.RawMessage
	record map[string]json.RawMessage
}

func (v *requestView) parse() bool {
	if !v.parsed {
		v.parsed = true
		trimmed := bytes.TrimSpace(v.body)
		if len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &v.obj) == nil {
			if raw, ok := v.obj["record"]; ok {
				_ = json.Unmarshal(raw, &v.record)
			}
		}
	}
	return v.obj != nil
}

// scalar renders a JSON string or number as the string the original hook compared
// (String(body.app)).
func scalar(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	return string(raw), true
}

func (c *compiled) matches(v *requestView) bool {
	if c.method != "" && c.method != v.method {
		return false
	}
	if !c.re.MatchString(v.path) {
		return false
	}
	if c.b.Match.App != "" && v.app() != c.b.Match.App {
		return false
	}
	bm := c.b.Match.Body
	if bm.empty() {
		return true
	}
	if !v.parse() {
		return false // any body condition with a non-JSON body is no match
	}
	if bm.App != "" {
		s, ok := scalar(v.obj["app"])
		if !ok || s != bm.App {
			return false
		}
	}
	if bm.ID != "" {
		s, ok := scalar(v.obj["id"])
		if !ok || s != bm.ID {
			return false
		}
	}
	if bm.Field != "" {
		if v.record == nil {
			return false
		}
		if _, ok := v.record[bm.Field]; !ok {
			return false
		}
	}
	return true
}

// app is the app the request addresses: the JSON body's top-level "app", else the query's.
func (v *requestView) app() string {
	if v.parse() {
		if s, ok := scalar(v.obj["app"]); ok {
			return s
		}
	}
	return v.query.Get("app")
}

// isHeartbeat: a PUT whose JSON record has heartbeat_at (the original's definition).
func (v *requestView) isHeartbeat() bool {
	// The byte check spares a JSON parse on the hot path for the many PUTs that are not
	// heartbeats (the field name appears literally in every heartbeat body).
	if v.method != "PUT" || !bytes.Contains(v.body, []byte(`"heartbeat_at"`)) || !v.parse() || v.record == nil {
		return false
	}
	_, ok := v.record["heartbeat_at"]
	return ok
}

// barrierState is the per-id state, kept for the proxy's life.
type barrierState struct {
	id       string
	defined  bool // false for a placeholder created by WaitArrival before the barrier exists
	fromFile bool
	c        *compiled

	fired    bool
	arrived  chan struct{} // closed at arrival
	arrival  Arrival
	released chan struct{} // closed by Release or the release file
	relDone  bool
}

func newState(id string) *barrierState {
	return &barrierState{id: id, arrived: make(chan struct{}), released: make(chan struct{})}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// touched names what a request touches, for the traffic log: app and record id from the JSON
// body's top level (or, for a body-less GET/DELETE, the app and id query values), and the
// sorted field names under record, or under every records[].record of a bulk write. Values
// of fields never leave this function.
func (v *requestView) touched(q url.Values) (app, id string, fields []string) {
	if v.parse() {
		if raw, ok := v.obj["app"]; ok {
			app, _ = scalar(raw)
		}
		if raw, ok := v.obj["id"]; ok {
			id, _ = scalar(raw)
		}
		names := map[string]bool{}
		for k := range v.record {
			names[k] = true
		}
		if raw, ok := v.obj["records"]; ok {
			var recs []struct {
				Record map[string]json.RawMessage `json:"record"`
			}
			if json.Unmarshal(raw, &recs) == nil {
				for _, r := range recs {
					for k := range r.Record {
						names[k] = true
					}
				}
			}
		}
		for k := range names {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		return app, id, fields
	}
	return q.Get("app"), q.Get("id"), nil
}
