// Package kintone is the sandbox's kintone REST emulator: records with revisions and unique
// fields, API-token auth with per-token permissions, the query language subset our traffic
// uses, files, bulk and cursor APIs, over HTTPS with a CA generated per start. It is strict
// on purpose: the scenarios test what kintone decides (see
// ../shared/reference/kintone-api.md), so leniency here would hide the bugs they look for.
package emulator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure an emulator start.
type Options struct {
	Addr      string                   // listen address; default 127.0.0.1:0
	PlainHTTP bool                     // serve http:// instead of https:// (not the default: real kintone is https-only)
	DataDir   string                   // load records on start, save them on Close ("" = in memory only)
	Latency   map[string]time.Duration // app role -> fixed delay added to every request on that app
	RaceDA02  bool                     // racing revision-checked updates fail with 400 GAIA_DA02 instead of 409 GAIA_CO02
	// ConcurrencyLimit is how many requests may be in flight before the next is answered
	// 429 GAIA_TO04 (kintone: 100 per domain, the default when <= 0).
	ConcurrencyLimit int
	// DailyRequestLimit is kintone's per-app daily request limit (10,000 on the standard
	// plan); past it a warning goes to Warnings, once per app and day, and requests are
	// still served, as kintone does. 0: no limit (requests are still counted).
	DailyRequestLimit int64
	// Warnings receives the daily-limit warnings (nil: discarded).
	Warnings io.Writer
}

// AppInfo describes one emulated app: its role, name, id and tokens by permission set.
type AppInfo struct {
	Role   string            `json:"role"`
	Name   string            `json:"name"`
	ID     string            `json:"id"`
	Tokens map[string]string `json:"tokens"`
}

// Server is a running emulator.
type Server struct {
	opts    Options
	apps    []*app
	byID    map[string]*app
	grants  map[string]grant // token -> grant
	files   *fileStore
	cursors *cursorStore
	now     func() time.Time
	hooks   writeHooks // test-only pauses in the write path; zero outside tests
	// admitted, set only by tests, runs for every request admitted under the concurrency
	// limit before it is served, so a test can hold requests in flight without timing.
	admitted func()
	daily    *dailyRequests
	limit    int64 // the concurrency limit

	ln      net.Listener
	srv     *http.Server
	baseURL string
	caFile  string
	tmpDir  string
	running atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

const adminCode = "Administrator"

// adminUser is the CREATOR/MODIFIER value of every record: token requests act as
// Administrator. Shared and never modified.
var adminUser = map[string]string{"code": adminCode, "name": adminCode}

// Start builds the apps from the schema files (seeded, or loaded from opts.DataDir), listens
// and serves until Close. ctx bounds only the start itself.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start kintone emulator: %w", err)
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	schemas, err := LoadSchemas()
	if err != nil {
		return nil, fmt.Errorf("start kintone emulator: %w", err)
	}
	s := &Server{opts: opts, byID: map[string]*app{}, grants: map[string]grant{},
		files: newFileStore(), cursors: newCursorStore(), now: time.Now, limit: defaultConcurrencyLimit}
	if opts.ConcurrencyLimit > 0 {
		s.limit = int64(opts.ConcurrencyLimit)
	}
	if opts.DailyRequestLimit < 0 {
		return nil, fmt.Errorf("start kintone emulator: negative daily request limit %d", opts.DailyRequestLimit)
	}
	s.daily = newDailyRequests(opts.DailyRequestLimit, opts.Warnings, func() time.Time { return s.now() })
	for _, sc := range schemas {
		a := newApp(sc)
		a.latency = opts.Latency[sc.Role]
		s.apps = append(s.apps, a)
		s.byID[sc.ID] = a
	}
	for role := range opts.Latency {
		if s.appByRole(role) == nil {
			return nil, fmt.Errorf("start kintone emulator: latency for unknown app role %q", role)
		}
	}
	loaded := false
	if opts.DataDir != "" {
		if loaded, err = s.load(opts.DataDir); err != nil {
			return nil, fmt.Errorf("start kintone emulator: load data dir %s: %w", opts.DataDir, err)
		}
	}
	if !loaded {
		if err := s.seed(); err != nil {
			return nil, fmt.Errorf("start kintone emulator: %w", err)
		}
	}
	s.makeTokens()

	s.tmpDir, err = os.MkdirTemp("", "flowsandbox-kintone-")
	if err != nil {
		return nil, fmt.Errorf("start kintone emulator: temp dir: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		os.RemoveAll(s.tmpDir)
		return nil, fmt.Errorf("start kintone emulator: listen %s: %w", opts.Addr, err)
	}
	scheme := "http"
	if !opts.PlainHTTP {
		cfg, caFile, err := newTLS(s.tmpDir)
		if err != nil {
			ln.Close()
			os.RemoveAll(s.tmpDir)
			return nil, fmt.Errorf("start kintone emulator: %w", err)
		}
		s.caFile = caFile
		ln = tls.NewListener(ln, cfg)
		scheme = "https"
	}
	s.ln = ln
	s.baseURL = scheme + "://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	go s.srv.Serve(ln) //nolint:errcheck // returns ErrServerClosed on Close
	return s, nil
}

// BaseURL is e.g. https://127.0.0.1:41234 (no trailing slash).
func (s *Server) BaseURL() string { return s.baseURL }

// CAFile is the PEM file of this start's CA ("" with PlainHTTP).
func (s *Server) CAFile() string { return s.caFile }

// Apps lists the apps in role order with their tokens.
func (s *Server) Apps() []AppInfo {
	out := make([]AppInfo, 0, len(s.apps))
	for _, a := range s.apps {
		toks := map[string]string{}
		for k, v := range a.tokens {
			toks[k] = v
		}
		out = append(out, AppInfo{Role: a.schema.Role, Name: a.schema.Name, ID: a.id(), Tokens: toks})
	}
	return out
}

// Close stops serving (waiting up to 10 s for requests in flight), saves the data dir if
// one is configured and removes the CA file.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var errs []error
		// Shutdown stops accepting and waits for handlers, but it would also wait ~5 s for
		// connections a client dialled and never used (TLS conns in StateNew). So wait for
		// the handlers in flight ourselves, then close whatever connections remain.
		shut := make(chan error, 1)
		go func() { shut <- s.srv.Shutdown(ctx) }()
		tick := time.NewTicker(5 * time.Millisecond)
	wait:
		for s.running.Load() > 0 {
			select {
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("shutdown: %d requests still running after 10 s", s.running.Load()))
				break wait
			case <-tick.C:
			}
		}
		tick.Stop()
		s.srv.Close()
		<-shut
		if s.opts.DataDir != "" {
			if err := s.save(s.opts.DataDir); err != nil {
				errs = append(errs, fmt.Errorf("save data dir %s: %w", s.opts.DataDir, err))
			}
		}
		if err := os.RemoveAll(s.tmpDir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", s.tmpDir, err))
		}
		if len(errs) > 0 {
			s.closeErr = fmt.Errorf("close kintone emulator: %w", errors.Join(errs...))
		}
	})
	return s.closeErr
}

func (s *Server) appByRole(role string) *app {
	for _, a := range s.apps {
		if a.schema.Role == role {
			return a
		}
	}
	return nil
}

// seed inserts the schema files' seed records.
func (s *Server) seed() error {
	for _, a := range s.apps {
		if len(a.schema.Seed) == 0 {
			continue
		}
		t := s.begin(nil, a)
		for i, sr := range a.schema.Seed {
			in := fieldInput{}
			for code, fv := range sr {
				in[code] = map[string]any{"value": fv.Value}
			}
			if _, aerr := t.add(a, in, fmt.Sprintf("seed[%d]", i)); aerr != nil {
				t.rollback()
				return fmt.Errorf("seed app %s record %d: %v", a.schema.Role, i, aerr)
			}
		}
		t.commit()
	}
	return nil
}
