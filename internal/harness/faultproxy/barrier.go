package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

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
	App string `json:"app,omitempty"` // top-level "app", string-compared
	ID  string `json:"id,omitempty"`  // top-level "id", string-compared
	// Key is the value of the top-level updateKey (a PUT by updateKey names its record so).
	// With ID too, either matches: the record, whether the write names it by id or by key.
	Key   string `json:"key,omitempty"`
	Field string `json:"field,omitempty"` // must be a key of the top-level "record" object
}

func (b *BodyMatch) empty() bool {
	return b == nil || (b.App == "" && b.ID == "" && b.Key == "" && b.Field == "")
}

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
	// After, when set, arms the barrier: it holds only a request that arrives after one
	// matching After has reached the proxy (and was not blocked), e.g. the first heartbeat
	// after a node's Attempt was created, not one of the heartbeats before it.
	After *Match `json:"after,omitempty"`
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

// Record is the arrival for the scenario record, at the proxy of process; the feature's
// name for the barrier is the steps' to add.
func (a Arrival) Record(process string) record.BarrierArrival {
	return record.BarrierArrival{ID: a.BarrierID, Process: process, Phase: string(a.Phase), Method: a.Method,
		Path: a.Path, Status: a.ResponseStatus, At: a.At}
}

// compiled is a validated barrier ready for matching.
type compiled struct {
	b      Barrier
	re     *regexp.Regexp
	method string
	after  *compiled // the arming request's matcher (nil: armed from the start)
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
	c := &compiled{b: b, re: re, method: strings.ToUpper(strings.TrimSpace(b.Match.Method))}
	if b.After != nil {
		a, err := compile(Barrier{ID: b.ID + " (after)", Phase: PhaseBefore, Match: *b.After})
		if err != nil {
			return nil, err
		}
		c.after = a
	}
	return c, nil
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
	if bm.ID != "" || bm.Key != "" {
		s, ok := scalar(v.obj["id"])
		byID := bm.ID != "" && ok && s == bm.ID
		byKey := bm.Key != "" && updateKeyValue(v.obj["updateKey"]) == bm.Key
		if !byID && !byKey {
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

// barrierState is the per-id state, kept for the proxy's life.
type barrierState struct {
	id       string
	defined  bool // false for a placeholder created by WaitArrival before the barrier exists
	fromFile bool
	c        *compiled

	fired    bool
	armed    bool          // a request matching the barrier's After has arrived
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

// AddBarrier installs a barrier. Its id must be new for this proxy, and its release
// file (if any) must not exist yet (a stale file would release it at once).
func (p *Proxy) AddBarrier(b Barrier) error {
	c, err := compile(b)
	if err != nil {
		return err
	}
	if b.Release != "" {
		if !filepath.IsAbs(b.Release) {
			return fmt.Errorf("barrier %s: release file %q must be an absolute path", b.ID, b.Release)
		}
		if fileExists(b.Release) {
			return fmt.Errorf("barrier %s: release file %s already exists", b.ID, b.Release)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isClosed {
		return fmt.Errorf("barrier %s: proxy is closed", b.ID)
	}
	st := p.states[b.ID]
	if st != nil && st.defined {
		return fmt.Errorf("barrier %s: id already used on this proxy", b.ID)
	}
	if st == nil {
		st = newState(b.ID)
		p.states[b.ID] = st
	}
	st.defined, st.c = true, c
	p.barriers = append(p.barriers, st)
	return nil
}

// Release releases a barrier, whether or not its request has arrived yet (a request
// arriving later passes without holding, but still counts as an arrival).
func (p *Proxy) Release(id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.states[id]
	if st == nil || !st.defined {
		return fmt.Errorf("release barrier %s: no such barrier on proxy %s", id, p.opts.Name)
	}
	p.releaseLocked(st)
	return nil
}

func (p *Proxy) releaseLocked(st *barrierState) {
	if !st.relDone {
		st.relDone = true
		close(st.released)
	}
}

// WaitArrival waits until a request has arrived at barrier id. Without a deadline in
// ctx it waits at most DefaultArrivalWait. The id may belong to a control-file barrier
// not read yet.
func (p *Proxy) WaitArrival(ctx context.Context, id string) (Arrival, error) {
	ctx, cancel := withDefaultWait(ctx)
	defer cancel()
	p.mu.Lock()
	st := p.states[id]
	if st == nil {
		st = newState(id)
		p.states[id] = st
	}
	p.mu.Unlock()
	arrived := func() Arrival {
		p.mu.Lock()
		defer p.mu.Unlock()
		return st.arrival
	}
	select {
	case <-st.arrived: // an arrival before Close or the deadline still counts
		return arrived(), nil
	default:
	}
	select {
	case <-st.arrived:
		return arrived(), nil
	case <-ctx.Done():
		c := p.Counts()
		return Arrival{}, fmt.Errorf("waiting for a request at barrier %s on proxy %s: %w (proxy saw %d requests, %d blocked, arrivals so far: %s)",
			id, p.opts.Name, context.Cause(ctx), c.Total, c.Blocked, p.arrivalSummary())
	case <-p.closed:
		return Arrival{}, fmt.Errorf("waiting for a request at barrier %s: proxy %s closed", id, p.opts.Name)
	}
}

func (p *Proxy) arrivalSummary() string {
	as := p.Arrivals()
	if len(as) == 0 {
		return "none"
	}
	var ids []string
	for _, a := range as {
		ids = append(ids, a.BarrierID)
	}
	return strings.Join(ids, ", ")
}

// Arrivals lists every barrier arrival so far, in order.
func (p *Proxy) Arrivals() []Arrival {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.arrivals)
}

// matchLocked returns the unfired barriers matching the request. "before" barriers are
// claimed (fired) here so two concurrent requests cannot both hold on one barrier;
// "after-success" ones are claimed only once a 2xx response is in.
func (p *Proxy) matchLocked(v *requestView) (befores, afters []*barrierState) {
	for _, set := range [][]*barrierState{p.barriers, p.fileBarriers} {
		for _, st := range set {
			if st.fired || !st.defined {
				continue
			}
			if st.c.after != nil && !st.armed {
				// Not armed yet: this request may arm it, for the requests after it only.
				st.armed = st.c.after.matches(v)
				continue
			}
			if !st.c.matches(v) {
				continue
			}
			if st.c.b.Phase == PhaseBefore {
				p.arriveLocked(st, v, 0)
				befores = append(befores, st)
			} else {
				afters = append(afters, st)
			}
		}
	}
	return befores, afters
}

func (p *Proxy) arriveLocked(st *barrierState, v *requestView, status int) {
	st.fired = true
	st.arrival = Arrival{At: time.Now().UTC(), BarrierID: st.id, Phase: st.c.b.Phase, Method: v.method, Path: v.path, ResponseStatus: status}
	p.arrivals = append(p.arrivals, st.arrival)
	close(st.arrived)
	p.writeLog(p.arrivalLog, st.arrival)
}

// hold blocks until the barrier is released, its release file appears, the timeout
// passes, the client goes away, or the proxy closes.
func (p *Proxy) hold(ctx context.Context, st *barrierState) error {
	p.mu.Lock()
	released := st.released
	rel := st.c.b.Release
	p.mu.Unlock()
	timer := time.NewTimer(p.opts.BarrierTimeout)
	defer timer.Stop()
	var tick <-chan time.Time
	if rel != "" {
		t := time.NewTicker(releaseFilePoll)
		defer t.Stop()
		tick = t.C
	}
	for {
		if rel != "" && fileExists(rel) {
			p.mu.Lock()
			p.releaseLocked(st)
			p.mu.Unlock()
		}
		select {
		case <-released:
			return nil
		case <-tick:
		case <-timer.C:
			p.mu.Lock()
			p.counts.BarrierTimeouts++
			p.mu.Unlock()
			return &barrierError{id: st.id, reason: fmt.Sprintf("release timed out after %s", p.opts.BarrierTimeout)}
		case <-ctx.Done():
			return &barrierError{id: st.id, reason: "client went away while held"}
		case <-p.closed:
			return &barrierError{id: st.id, reason: "proxy closed while held"}
		}
	}
}

// withDefaultWait bounds a wait by DefaultArrivalWait when ctx has no deadline.
func withDefaultWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultArrivalWait)
}
