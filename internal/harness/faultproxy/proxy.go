package faultproxy

import (
	"crypto/tls"
	"crypto/x509"
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
	"sync/atomic"
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
	// Counter, if set, counts every request forwarded to the upstream (count.go).
	Counter RequestCounter
	// AppsByToken maps API tokens to their app ids: the counted app of a request that names
	// none (file uploads and downloads) is its token's, as kintone counts it.
	AppsByToken map[string]string
	// Judged are the fields whose single values Traffic keeps for a write (TrafficLine.Write):
	// identities and states an invariant judges, never written to the log file.
	Judged []string
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

	gate atomic.Pointer[gateBox] // SetGate (gate.go); nil: no gate

	mu           sync.Mutex
	mode         Mode
	barriers     []*barrierState // in-process, in order added
	fileBarriers []*barrierState // from the control file, replaced on change
	states       map[string]*barrierState
	faults       []*faultState // in-process, armed, in order added
	fileFaults   []*faultState // from the control file, replaced on change
	faultStates  map[string]*faultState
	firings      []Firing
	// firingsChanged is closed and replaced at every firing (wakes WaitFirings).
	firingsChanged chan struct{}
	ctlProblems    []string
	arrivals       []Arrival
	counts         Counts
	traffic        []TrafficLine
	isClosed       bool

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
	up, err := checkUpstream(opts)
	if err != nil {
		return nil, err
	}
	opts = withDefaults(opts)
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("fault proxy %s: %w", opts.Name, err)
	}

	rootCAs, err := upstreamRoots(opts)
	if err != nil {
		return nil, err
	}

	p := &Proxy{
		opts:           opts,
		upstream:       up,
		closed:         make(chan struct{}),
		mode:           ModePass,
		states:         map[string]*barrierState{},
		faultStates:    map[string]*faultState{},
		firingsChanged: make(chan struct{}),
		counts:         Counts{Records: map[string]int{}},
	}
	p.tr, p.rp = p.reverseProxy(up, rootCAs)

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
		tln, err := p.listenTLS(ln, name)
		if err != nil {
			ln.Close()
			p.closeFiles()
			return nil, fmt.Errorf("fault proxy %s: %w", opts.Name, err)
		}
		ln = tln
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

// checkUpstream is the upstream base URL: absolute http(s), without query or fragment; a
// log folder is required too.
func checkUpstream(opts Options) (*url.URL, error) {
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
	return up, nil
}

// withDefaults fills the options left zero.
func withDefaults(opts Options) Options {
	if opts.BarrierTimeout <= 0 {
		opts.BarrierTimeout = DefaultBarrierTimeout
	}
	if opts.MaxBodyBuffer <= 0 {
		opts.MaxBodyBuffer = DefaultMaxBodyBuffer
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	return opts
}

// upstreamRoots are the CAs the proxy trusts upstream: the system's, plus opts.UpstreamCA.
func upstreamRoots(opts Options) (*x509.CertPool, error) {
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
	return rootCAs, nil
}

// reverseProxy is the transport to the upstream and the reverse proxy over it.
func (p *Proxy) reverseProxy(up *url.URL, rootCAs *x509.CertPool) (*http.Transport, *httputil.ReverseProxy) {
	// No environment proxy: FlowNet's own fetch does not use one either, and the
	// runner's HTTP(S)_PROXY must not reroute test traffic.
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12},
		MaxIdleConns:          128,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			if rs, _ := pr.In.Context().Value(ctxKey{}).(*reqState); rs != nil {
				rs.entry.sent = answers.Add(1) // forwarded now: kintone applies it from here on
			}
			pr.SetURL(up)
		},
		Transport:      tr,
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		// The default logger would print upstream errors, which can carry URLs.
		ErrorLog: log.New(io.Discard, "", 0),
		// Without a pool every response copy allocates 32 KiB; the garbage shows up
		// as tail latency.
		BufferPool: &bufferPool{},
	}
	return tr, rp
}

// listenTLS serves ln over TLS with a certificate of opts.CA (a new CA when none is given),
// and writes the CA's certificate beside the logs for the clients to trust.
func (p *Proxy) listenTLS(ln net.Listener, name string) (net.Listener, error) {
	ca := p.opts.CA
	if ca == nil {
		var err error
		if ca, err = NewCA(); err != nil {
			return nil, err
		}
	}
	cert, err := ca.ServerCert()
	if err == nil {
		p.caFile = filepath.Join(p.opts.LogDir, name+".ca.pem")
		err = ca.WriteCertFile(p.caFile)
	}
	if err != nil {
		return nil, err
	}
	// HTTP/1.1 only: dropping a connection needs Hijack, which HTTP/2 lacks.
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}), nil
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
	p.ctlProblems = spec.problems
	p.fileFaults = p.fileFaults[:0:0]
	for _, c := range spec.faults {
		id := c.f.ID
		st := p.faultStates[id]
		switch {
		case st != nil && !st.fromFile:
			p.ctlProblems = append(p.ctlProblems, fmt.Sprintf("fault %s: id is taken by a fault added in-process", id))
			continue
		case c.f.Delay > p.opts.BarrierTimeout:
			p.ctlProblems = append(p.ctlProblems, fmt.Sprintf("fault %s: delay %s exceeds the proxy's hold bound %s", id, c.f.Delay, p.opts.BarrierTimeout))
			continue
		case st == nil:
			st = &faultState{fromFile: true}
			p.faultStates[id] = st
		}
		// Counts are kept by id across edits, so rewriting the file does not re-arm a
		// fault that already fired; a new id does.
		st.c = c
		p.fileFaults = append(p.fileFaults, st)
	}
}

// ControlProblems names what the control file's current content gets wrong (an unknown
// mode, barriers and faults that were dropped), nil when it is fine or absent.
func (p *Proxy) ControlProblems() []string {
	p.refreshControl()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ctlProblems)
}
