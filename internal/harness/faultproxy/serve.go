package faultproxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Request handling.

type ctxKey struct{}

// reqState carries one request's bookkeeping through the ReverseProxy hooks.
type reqState struct {
	view   *requestView
	afters []*barrierState
	fault  *faultTake // the fault that took the request, if any
	entry  *trafficEntry
	start  time.Time
	logged bool
}

var (
	recordsPath = regexp.MustCompile(`^/k/v1/(guest/\d+/)?records?\.json$`)
	filePath    = regexp.MustCompile(`^/k/v1/(guest/\d+/)?file\.json$`)
)

// barrierError is a hold that ended without a release; its text is ours alone.
type barrierError struct{ id, reason string }

func (e *barrierError) Error() string { return fmt.Sprintf("barrier %s: %s", e.id, e.reason) }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// Register under the lock that Close takes to set isClosed, so no request joins
	// the in-flight group after Close has started waiting for it.
	p.mu.Lock()
	if p.isClosed {
		p.mu.Unlock()
		drop(w)
		return
	}
	p.inflight.Add(1)
	p.mu.Unlock()
	defer p.inflight.Done()
	p.refreshControl()

	view := &requestView{method: r.Method, override: r.Header.Get("X-HTTP-Method-Override"), path: r.URL.Path, query: r.URL.Query()}
	bodyErr := p.bufferBody(r, view)
	entry := p.newEntry(r, view, start)
	if bodyErr != nil {
		// Nothing sensible can be forwarded; fail the way the broken connection already has.
		entry.Error = "request body could not be read"
		p.logTraffic(entry, start)
		drop(w)
		return
	}

	p.mu.Lock()
	p.countLocked(r.Method, entry)
	if p.mode.blocks(r.Method) {
		// Blocked requests never reach barriers (as in the original hook).
		entry.Blocked = true
		p.counts.Blocked++
		p.mu.Unlock()
		p.logTraffic(entry, start)
		drop(w)
		return
	}
	if g := gateOf(&p.gate); g != nil { // one atomic load when no gate is installed
		p.mu.Unlock() // a gate may hold the request for long
		gr := view.gateRequest(entry.App, entry.RecordID, entry.Fields, entry.Heartbeat)
		gr.MethodOverride = view.override
		done, err := g.Begin(r.Context(), gr)
		if err != nil {
			entry.Error = "gate: " + err.Error()
			p.logTraffic(entry, start)
			drop(w)
			return
		}
		defer func() {
			status := entry.Status
			if entry.Error != "" {
				status = 0
			}
			done(status)
		}()
		p.mu.Lock()
	}
	befores, afters := p.matchLocked(view)
	var take *faultTake
	if len(p.faults)+len(p.fileFaults) > 0 { // no fault armed: no fault matching at all
		take = p.takeFaultLocked(view, entry)
	}
	p.mu.Unlock()

	// Barriers hold first; a fault acts on the request once they released it.
	if !p.holdBefore(w, r, befores, take, entry, start) {
		return
	}
	if take != nil && !p.applyBeforeForward(w, r, take, start) {
		return
	}
	rs := &reqState{view: view, afters: afters, fault: take, entry: entry, start: start}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, rs)))
	if !rs.logged {
		p.logTraffic(entry, start)
	}
}

// holdBefore holds the request at each of its before barriers in turn; false when one failed
// (timed out, the client left), after the request was logged and its connection dropped.
func (p *Proxy) holdBefore(w http.ResponseWriter, r *http.Request, befores []*barrierState, take *faultTake, entry *trafficEntry, start time.Time) bool {
	for _, st := range befores {
		if err := p.hold(r.Context(), st); err != nil {
			entry.Error = err.Error()
			p.fired(take, 0, "not applied: "+entry.Error)
			p.logTraffic(entry, start)
			drop(w)
			return false
		}
	}
	return true
}

// newEntry is the traffic line of the request seen in view: what it touched, and for a
// write to the record(s) endpoint whether it was fenced and what a gate would judge of it.
func (p *Proxy) newEntry(r *http.Request, view *requestView, start time.Time) *trafficEntry {
	entry := &trafficEntry{At: start.UTC(), Method: r.Method, Path: r.URL.Path, Targeted: true, Heartbeat: view.isHeartbeat()}
	entry.App, entry.RecordID, entry.RecordKey, entry.Fields = view.touched()
	if view.isWrite() {
		entry.Fenced = view.fenced()
		if recordsPath.MatchString(entry.Path) {
			gr := view.gateRequest(entry.App, entry.RecordID, entry.Fields, entry.Heartbeat)
			gr.Values = keepValues(gr.Values, p.opts.Judged)
			entry.write = &gr
		}
	}
	return entry
}

// countLocked counts the request by endpoint (p.mu held).
func (p *Proxy) countLocked(method string, entry *trafficEntry) {
	p.counts.Total++
	switch {
	case recordsPath.MatchString(entry.Path):
		p.counts.Records[method]++
	case filePath.MatchString(entry.Path):
		p.counts.File++
	default:
		p.counts.Other++
	}
	if entry.Heartbeat {
		p.counts.Heartbeat++
	}
}

// bufferBody reads a (bounded) copy of the body for matching and heartbeat detection,
// and puts an equivalent body back for forwarding. An error means the client's body
// could not be read (it went away mid-request).
func (p *Proxy) bufferBody(r *http.Request, view *requestView) error {
	if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	if strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "multipart/") {
		return nil // file uploads: never matched, not worth copying
	}
	if n := r.ContentLength; n >= 0 && n <= p.opts.MaxBodyBuffer {
		// The usual case: read exactly the declared length in one allocation.
		buf := make([]byte, n)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return err
		}
		r.Body.Close()
		view.body = buf
		r.Body = io.NopCloser(bytes.NewReader(buf))
		return nil
	}
	if r.ContentLength > p.opts.MaxBodyBuffer {
		return nil // too large to buffer: streamed, never matches body conditions
	}
	// Unknown length (chunked): read up to the limit.
	buf, err := io.ReadAll(io.LimitReader(r.Body, p.opts.MaxBodyBuffer+1))
	if err != nil {
		return err
	}
	if int64(len(buf)) > p.opts.MaxBodyBuffer {
		// Too large: forward what was read plus the rest, unmatched.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
		return nil
	}
	r.Body.Close()
	view.body = buf
	r.Body = io.NopCloser(bytes.NewReader(buf))
	r.ContentLength = int64(len(buf))
	r.Header.Del("Transfer-Encoding")
	r.TransferEncoding = nil
	return nil
}

func (p *Proxy) modifyResponse(resp *http.Response) error {
	rs, _ := resp.Request.Context().Value(ctxKey{}).(*reqState)
	if rs == nil {
		return nil
	}
	rs.entry.Status = resp.StatusCode
	rs.entry.answer = answers.Add(1) // kintone has answered: it applied the write or refused it
	if rs.entry.write != nil && rs.view.method == http.MethodPost && resp.StatusCode >= 200 && resp.StatusCode <= 299 && strings.HasSuffix(rs.entry.Path, "/record.json") {
		rs.entry.created = createdID(resp)
	}
	p.countSent(resp.Request, rs.entry.App, resp.StatusCode)
	if err := p.holdAfterSuccess(resp, rs); err != nil {
		return err
	}
	if rs.fault != nil && rs.fault.c.f.Action == ActionLoseResponse {
		return errResponseLost // the upstream has answered, so it has applied the request
	}
	return nil
}

// holdAfterSuccess holds a 2xx response at the after-success barriers the request matched.
func (p *Proxy) holdAfterSuccess(resp *http.Response, rs *reqState) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 || len(rs.afters) == 0 {
		return nil // a non-2xx response never consumes an after-success barrier
	}
	var claimed []*barrierState
	p.mu.Lock()
	for _, st := range rs.afters {
		if !st.fired { // a concurrent request may have claimed it meanwhile
			p.arriveLocked(st, rs.view, resp.StatusCode)
			claimed = append(claimed, st)
		}
	}
	p.mu.Unlock()
	for _, st := range claimed {
		if err := p.hold(resp.Request.Context(), st); err != nil {
			return err
		}
	}
	return nil
}

func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	rs, _ := r.Context().Value(ctxKey{}).(*reqState)
	if rs != nil && rs.entry.Status == 0 {
		p.countSent(r, rs.entry.App, 0) // sent, unanswered: it may have reached the tenant
	}
	var be *barrierError
	switch {
	case errors.Is(err, errResponseLost):
		if rs != nil {
			p.fired(rs.fault, rs.entry.Status, "")
		}
	case errors.As(err, &be):
		if rs != nil {
			rs.entry.Error = be.Error()
		}
	case r.Context().Err() != nil:
		if rs != nil {
			rs.entry.Error = "client went away"
		}
	default:
		// Transport errors can embed the request URL (with its query): log a fixed kind.
		p.mu.Lock()
		p.counts.UpstreamErrors++
		p.mu.Unlock()
		if rs != nil {
			rs.entry.Error = "upstream request failed"
		}
	}
	if rs != nil {
		if rs.entry.Error != "" {
			p.fired(rs.fault, 0, "not applied: "+rs.entry.Error)
		}
		rs.logged = true
		p.logTraffic(rs.entry, rs.start)
	}
	drop(w)
}

// drop closes the client connection without writing a response, so the client sees a
// network error rather than an HTTP status.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (should not happen: HTTP/2 is disabled); abort the handler,
		// which also closes the connection without a response.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*tls.Conn); ok {
		// Skip the TLS close_notify: an abrupt end is what a real outage looks like.
		conn = tc.NetConn()
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // RST, so the client fails at once instead of waiting on FIN
	}
	_ = conn.Close()
}

// IsRecordsPath: path is kintone's record or records endpoint (the one the Records counters
// count), in a guest space or not.
func IsRecordsPath(path string) bool { return recordsPath.MatchString(path) }

// createdID reads the id kintone gave the record a POST added ({"id": …, "revision": …}) and
// puts the body back for the client; "" when it cannot tell. The body is read at most 64 KiB
// far (an answer to one added record is a few bytes).
func createdID(resp *http.Response) string {
	if resp.Body == nil {
		return ""
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return ""
	}
	var out struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(head, &out) != nil {
		return ""
	}
	id, _ := scalar(out.ID)
	return id
}
