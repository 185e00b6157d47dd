package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults.
const (
	DefaultBarrierTimeout = 120 * time.Second // the original hook's release timeout
	DefaultArrivalWait    = 60 * time.Second  // WaitArrival bound when ctx has none (original: ≤60 s)
	DefaultMaxBodyBuffer  = 8 << 20
	releaseFilePoll       = 2 * time.Millisecond // one stat per held barrier; cheap
)

// Options configures a Proxy.
type Options struct {
	// Name prefixes the log and CA files ("poller-1"); default "faultproxy".
	Name string
	// Upstream is the real kintone base URL (http or https).
	Upstream string
	// UpstreamCA is a PEM file of extra roots to trust for the upstream ("" = system roots).
	UpstreamCA string
	// TLS makes the proxy serve HTTPS (see the package comment).
	TLS bool
	// CA signs the proxy's server certificate; nil mints one for this proxy.
	CA *CA
	// LogDir receives the traffic and arrival logs and the CA file; required.
	LogDir string
	// BarrierTimeout bounds every hold; default 120 s.
	BarrierTimeout time.Duration
	// ControlFile, if set, is the operator's control file (see the package comment).
	ControlFile string
	// Listen is the listen address; default 127.0.0.1:0.
	Listen string
	// MaxBodyBuffer bounds how much of a request body is buffered for matching
	// (default 8 MiB); larger bodies are streamed and never match body conditions.
	MaxBodyBuffer int64
}

// Counts are the proxy's request counters.
type Counts struct {
	Total   int `json:"total"`
	Blocked int `json:"blocked"`
	// Records counts /k/v1/record.json and /k/v1/records.json (also in guest spaces) by method.
	Records map[string]int `json:"records"`
	File    int            `json:"file"`
	Other   int            `json:"other"`
	// Heartbeat counts PUTs whose JSON record has heartbeat_at; they are also in Records["PUT"].
	Heartbeat       int `json:"heartbeat"`
	BarrierTimeouts int `json:"barrier_timeouts"`
	// UpstreamErrors counts requests whose upstream call failed (reported to the client
	// as a dropped connection).
	UpstreamErrors int `json:"upstream_errors"`
}

// RecordsTotal sums Records over methods.
func (c Counts) RecordsTotal() int {
	n := 0
	for _, v := range c.Records {
		n += v
	}
	return n
}

// Proxy is a running fault proxy. All methods are safe for concurrent use.
type Proxy struct {
	opts     Options
	upstream *url.URL
	url      string
	caFile   string
	srv      *http.Server
	tr       *http.Transport
	rp       *httputil.ReverseProxy
	closed   chan struct{}
	inflight sync.WaitGroup

	ctlMu sync.Mutex
	ctl   *controlWatcher

	mu           sync.Mutex
	mode         Mode
	barriers     []*barrierState // in-process, in order added
	fileBarriers []*barrierState // from the control file, replaced on change
	states       map[string]*barrierState
	arrivals     []Arrival
	counts       Counts
	traffic      []TrafficLine
	isClosed     bool

	// Log lines go through one writer goroutine so no request waits on a file write.
	logMu      sync.RWMutex // guards logClosed against sends on a closed logCh
	logClosed  bool
	logCh      chan logLine
	logDone    chan struct{}
	trafficLog *os.File
	arrivalLog *os.File
}

type logLine struct {
	f       *os.File
	b       []byte
	flushed chan struct{} // a flush marker, when non-nil
}

// New starts a proxy listening on loopback.
func New(opts Options) (*Proxy, error) {
	if opts.Name == "" {
		opts.Name = "faultproxy"
	}
	name := regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(opts.Name, "_")
	up, err := url.Parse(opts.Upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return nil, fmt.Errorf("fault proxy %s: upstream %q is not an absolute http(s) URL", opts.Name, opts.Upstream)
	}
	if up.RawQuery != "" || up.Fragment != "" {
		return nil, fmt.Errorf("fault proxy %s: upstream must be a base URL without query or fragment", opts.Name)
	}
	if opts.LogDir == "" {
		return nil, fmt.Errorf("fault proxy %s: LogDir is required", opts.Name)
	}
	if opts.BarrierTimeout <= 0 {
		opts.BarrierTimeout = DefaultBarrierTimeout
	}
	if opts.MaxBodyBuffer <= 0 {
		opts.MaxBodyBuffer = DefaultMaxBodyBuffer
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("fault proxy %s: %w", opts.Name, err)
	}

	rootCAs, err := x509.SystemCertPool()
	if err != nil || rootCAs == nil {
		rootCAs = x509.NewCertPool()
	}
	if opts.UpstreamCA != "" {
		pemData, err := os.ReadFile(opts.UpstreamCA)
		if err != nil {
			return nil, fmt.Errorf("fault proxy %s: upstream CA: %w", opts.Name, err)
		}
		if !rootCAs.AppendCertsFromPEM(pemData) {
			return nil, fmt.Errorf("fault proxy %s: upstream CA %s holds no PEM certificate", opts.Name, opts.UpstreamCA)
		}
	}

	p := &Proxy{
		opts:     opts,
		upstream: up,
		closed:   make(chan struct{}),
		mode:     ModePass,
		states:   map[string]*barrierState{},
		counts:   Counts{Records: map[string]int{}},
	}
	// No environment proxy: FlowNet's own fetch does not use one either, and the
	// runner's HTTP(S)_PROXY must not reroute test traffic.
	p.tr = &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12},
		MaxIdleConns:          128,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(up) },
		Transport:      p.tr,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		// The default logger would print upstream errors, which can carry URLs.
		ErrorLog: log.New(io.Discard, "", 0),
		// Without a pool every response copy allocates 32 KiB; the garbage shows up
		// as tail latency.
		BufferPool: &bufferPool{},
	}

	if p.trafficLog, err = openLog(filepath.Join(opts.LogDir, name+".traffic.jsonl")); err != nil {
		return nil, fmt.Errorf("fault proxy %s: %w", opts.Name, err)
	}
	if p.arrivalLog, err = openLog(filepath.Join(opts.LogDir, name+".arrivals.jsonl")); err != nil {
		p.trafficLog.Close()
		return nil, fmt.Errorf("fault proxy %s: %w", opts.Name, err)
	}

	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("fault proxy %s: listen: %w", opts.Name, err)
	}
	scheme := "http"
	if opts.TLS {
		ca := opts.CA
		if ca == nil {
			if ca, err = NewCA(); err != nil {
				ln.Close()
				p.closeFiles()
				return nil, fmt.Errorf("fault proxy %s: %w", opts.Name, err)
			}
		}
		cert, err := ca.serverCert()
		if err == nil {
			p.caFile = filepath.Join(opts.LogDir, name+".ca.pem")
			err = ca.WriteCertFile(p.caFile)
		}
		if err != nil {
			ln.Close()
			p.closeFiles()
			return nil, fmt.Errorf("fault proxy %s: %w", opts.Name, err)
		}
		// HTTP/1.1 only: dropping a connection needs Hijack, which HTTP/2 lacks.
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	p.logCh = make(chan logLine, 1024)
	p.logDone = make(chan struct{})
	go p.logWriter()
	p.url = scheme + "://" + ln.Addr().String()
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	if opts.ControlFile != "" {
		p.ctl = &controlWatcher{path: opts.ControlFile}
		p.refreshControl()
	}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// URL is the base URL children get instead of the real kintone base URL.
func (p *Proxy) URL() string { return p.url }

// CAFile is the PEM file of the CA that signed the proxy's certificate ("" without TLS).
func (p *Proxy) CAFile() string { return p.caFile }

// TrafficLogPath and ArrivalLogPath are the JSONL logs.
func (p *Proxy) TrafficLogPath() string { return p.trafficLog.Name() }
func (p *Proxy) ArrivalLogPath() string { return p.arrivalLog.Name() }

// SetMode changes the mode for requests that arrive from now on.
func (p *Proxy) SetMode(m Mode) error {
	if _, err := ParseMode(string(m)); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	return nil
}

// Mode is the current mode (after applying any control-file change).
func (p *Proxy) Mode() Mode {
	p.refreshControl()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
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
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultArrivalWait)
		defer cancel()
	}
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

// Counts returns a copy of the counters.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	c.Records = make(map[string]int, len(p.counts.Records))
	for k, v := range p.counts.Records {
		c.Records[k] = v
	}
	return c
}

// Close stops the proxy: held requests fail (connection dropped), the listener and all
// connections close, and the logs are flushed and closed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.isClosed {
		p.mu.Unlock()
		return nil
	}
	p.isClosed = true
	close(p.closed)
	p.mu.Unlock()

	err := p.srv.Close()
	p.tr.CloseIdleConnections()
	done := make(chan struct{})
	go func() { p.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		err = errors.Join(err, fmt.Errorf("fault proxy %s: requests still in flight after close", p.opts.Name))
	}
	return errors.Join(err, p.closeLogs())
}

func (p *Proxy) closeLogs() error {
	p.logMu.Lock()
	if !p.logClosed {
		p.logClosed = true
		close(p.logCh)
	}
	p.logMu.Unlock()
	<-p.logDone
	return p.closeFiles()
}

func (p *Proxy) closeFiles() error {
	var errs []error
	for _, f := range []*os.File{p.trafficLog, p.arrivalLog} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

func (p *Proxy) refreshControl() {
	if p.ctl == nil {
		return
	}
	p.ctlMu.Lock()
	spec, changed := p.ctl.poll()
	p.ctlMu.Unlock()
	if !changed {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = spec.mode
	p.fileBarriers = p.fileBarriers[:0:0]
	for _, c := range spec.barriers {
		st := p.states[c.b.ID]
		if st != nil && st.defined && !st.fromFile {
			continue // an in-process barrier owns this id
		}
		if st == nil {
			st = newState(c.b.ID)
			p.states[c.b.ID] = st
		}
		st.defined, st.fromFile, st.c = true, true, c
		p.fileBarriers = append(p.fileBarriers, st)
	}
}

// Request handling.

type ctxKey struct{}

// reqState carries one request's bookkeeping through the ReverseProxy hooks.
type reqState struct {
	view   *requestView
	afters []*barrierState
	entry  *trafficEntry
	start  time.Time
	logged bool
}

type trafficEntry struct {
	At     time.Time `json:"at"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	// App, RecordID and Fields say what the request touched: the app and record id (JSON
	// body's top-level app/id, or the app/id query parameters of a GET, values only — never
	// the query string), and the field names under record (or records[].record), sorted;
	// never a field value.
	App        string   `json:"app,omitempty"`
	RecordID   string   `json:"record_id,omitempty"`
	Fields     []string `json:"fields,omitempty"`
	Targeted   bool     `json:"targeted"`
	Blocked    bool     `json:"blocked"`
	Heartbeat  bool     `json:"heartbeat"`
	Status     int      `json:"status,omitempty"`
	DurationMS float64  `json:"duration_ms"`
	Error      string   `json:"error,omitempty"`
}

// TrafficLine is one logged request as Traffic returns it (the traffic log's fields).
type TrafficLine struct {
	At         time.Time
	Method     string
	Path       string
	App        string
	RecordID   string
	Fields     []string
	Blocked    bool
	Heartbeat  bool
	Status     int
	DurationMS float64
	Error      string
}

// maxTrafficLines bounds the lines Traffic keeps in memory (the log file keeps all).
const maxTrafficLines = 20000

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

	view := &requestView{method: r.Method, path: r.URL.Path, query: r.URL.Query()}
	bodyErr := p.bufferBody(r, view)
	entry := &trafficEntry{At: start.UTC(), Method: r.Method, Path: r.URL.Path, Targeted: true, Heartbeat: view.isHeartbeat()}
	entry.App, entry.RecordID, entry.Fields = view.touched(r.URL.Query())
	if bodyErr != nil {
		// Nothing sensible can be forwarded; fail the way the broken connection already has.
		entry.Error = "request body could not be read"
		p.logTraffic(entry, start)
		drop(w)
		return
	}

	p.mu.Lock()
	p.counts.Total++
	switch {
	case recordsPath.MatchString(entry.Path):
		p.counts.Records[r.Method]++
	case filePath.MatchString(entry.Path):
		p.counts.File++
	default:
		p.counts.Other++
	}
	if entry.Heartbeat {
		p.counts.Heartbeat++
	}
	if p.mode.blocks(r.Method) {
		// Blocked requests never reach barriers (as in the original hook).
		entry.Blocked = true
		p.counts.Blocked++
		p.mu.Unlock()
		p.logTraffic(entry, start)
		drop(w)
		return
	}
	befores, afters := p.matchLocked(view)
	p.mu.Unlock()

	for _, st := range befores {
		if err := p.hold(r.Context(), st); err != nil {
			entry.Error = err.Error()
			p.logTraffic(entry, start)
			drop(w)
			return
		}
	}
	rs := &reqState{view: view, afters: afters, entry: entry, start: start}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, rs)))
	if !rs.logged {
		p.logTraffic(entry, start)
	}
}

// logTraffic queues the request's traffic line. Failed requests are logged before
// their connection is dropped, so a client that saw the failure finds the line after
// FlushLogs.
func (p *Proxy) logTraffic(e *trafficEntry, start time.Time) {
	e.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	p.mu.Lock()
	if len(p.traffic) < maxTrafficLines {
		p.traffic = append(p.traffic, TrafficLine{At: e.At, Method: e.Method, Path: e.Path, App: e.App, RecordID: e.RecordID,
			Fields: e.Fields, Blocked: e.Blocked, Heartbeat: e.Heartbeat, Status: e.Status, DurationMS: e.DurationMS, Error: e.Error})
	}
	p.mu.Unlock()
	p.writeLog(p.trafficLog, e)
}

// Traffic returns the requests logged so far, in the order they ended (at most the first
// 20000; the traffic log file holds every one).
func (p *Proxy) Traffic() []TrafficLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]TrafficLine(nil), p.traffic...)
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

// matchLocked returns the unfired barriers matching the request. "before" barriers are
// claimed (fired) here so two concurrent requests cannot both hold on one barrier;
// "after-success" ones are claimed only once a 2xx response is in.
func (p *Proxy) matchLocked(v *requestView) (befores, afters []*barrierState) {
	for _, set := range [][]*barrierState{p.barriers, p.fileBarriers} {
		for _, st := range set {
			if st.fired || !st.defined || !st.c.matches(v) {
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

func (p *Proxy) modifyResponse(resp *http.Response) error {
	rs, _ := resp.Request.Context().Value(ctxKey{}).(*reqState)
	if rs == nil {
		return nil
	}
	rs.entry.Status = resp.StatusCode
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
	var be *barrierError
	switch {
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

func (p *Proxy) writeLog(f *os.File, v any) {
	line, err := json.Marshal(v)
	if err != nil {
		return
	}
	line = append(line, '\n')
	p.logMu.RLock()
	defer p.logMu.RUnlock()
	if !p.logClosed {
		p.logCh <- logLine{f: f, b: line}
	}
}

// FlushLogs returns once every log line queued so far is written to its file.
func (p *Proxy) FlushLogs() {
	done := make(chan struct{})
	p.logMu.RLock()
	if p.logClosed {
		p.logMu.RUnlock()
		return // Close already wrote everything
	}
	p.logCh <- logLine{flushed: done}
	p.logMu.RUnlock()
	<-done
}

func (p *Proxy) logWriter() {
	defer close(p.logDone)
	bufs := map[*os.File]*bufio.Writer{}
	flushAll := func() {
		for _, b := range bufs {
			_ = b.Flush() // a failing log disk must not fail the proxied traffic
		}
	}
	for l := range p.logCh {
		if l.flushed != nil {
			flushAll()
			close(l.flushed)
			continue
		}
		b := bufs[l.f]
		if b == nil {
			b = bufio.NewWriter(l.f)
			bufs[l.f] = b
		}
		_, _ = b.Write(l.b)
		if len(p.logCh) == 0 {
			flushAll() // batch only while lines are queued; never sit on a line
		}
	}
	flushAll()
}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }
