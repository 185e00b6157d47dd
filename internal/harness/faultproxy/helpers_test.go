package faultproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// upstream is a real HTTPS server standing in for kintone. A request header
// X-Want-Status makes it answer with that status.
type upstream struct {
	srv    *httptest.Server
	caFile string
	mu     sync.Mutex
	hits   []hit
}

type hit struct {
	Method, Path, Query, Body, Host string
}

const plantedResponse = "PLANTED-RESPONSE-c0ffee"

func newUpstream(t testing.TB) *upstream {
	u := &upstream{}
	u.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.hits = append(u.hits, hit{r.Method, r.URL.Path, r.URL.RawQuery, string(body), r.Host})
		u.mu.Unlock()
		status := http.StatusOK
		if s := r.Header.Get("X-Want-Status"); s != "" {
			status, _ = strconv.Atoi(s)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"revision":"2","note":"`+plantedResponse+`"}`)
	}))
	t.Cleanup(u.srv.Close)
	u.caFile = filepath.Join(t.TempDir(), "upstream-ca.pem")
	require.NoError(t, os.WriteFile(u.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.srv.Certificate().Raw}), 0o644))
	return u
}

func (u *upstream) hitCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.hits)
}

func (u *upstream) hitList() []hit {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]hit(nil), u.hits...)
}

func newProxy(t testing.TB, u *upstream, mutate func(*Options)) *Proxy {
	opts := Options{Name: "flownet", Upstream: u.srv.URL, UpstreamCA: u.caFile, TLS: true,
		LogDir: t.TempDir(), BarrierTimeout: 10 * time.Second}
	if mutate != nil {
		mutate(&opts)
	}
	p, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// proxied is an upstream, a proxy with the default options in front of it and a client of
// the proxy.
func proxied(t *testing.T) (*upstream, *Proxy, *http.Client) {
	t.Helper()
	u := newUpstream(t)
	p := newProxy(t, u, nil)
	return u, p, clientFor(t, p.CAFile())
}

// clientFor trusts the proxy's CA. Keep-alives are off so each request is its own
// connection and counts are exact (a dropped keep-alive connection may make the
// client retry an idempotent request).
func clientFor(t testing.TB, caFiles ...string) *http.Client {
	pool := x509.NewCertPool()
	for _, f := range caFiles {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.True(t, pool.AppendCertsFromPEM(data))
	}
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool},
			DisableKeepAlives: true,
		},
	}
}

type reply struct {
	status int
	body   string
	err    error
}

func send(c *http.Client, method, u, body string, hdr map[string]string) reply {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, u, rd)
	if err != nil {
		return reply{err: err}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: string(b), err: err}
}

func sendAsync(c *http.Client, method, u, body string, hdr map[string]string) <-chan reply {
	ch := make(chan reply, 1)
	go func() { ch <- send(c, method, u, body, hdr) }()
	return ch
}

// requireNetworkError asserts the client got no HTTP response at all.
func requireNetworkError(t *testing.T, r reply) {
	t.Helper()
	require.Error(t, r.err, "expected a network error, got HTTP %d", r.status)
	var ue *url.Error
	require.True(t, errors.As(r.err, &ue), "error %v is not a transport error", r.err)
	require.Zero(t, r.status)
}

// arrived waits (10 s at most) for a request to arrive at barrier id and returns the arrival.
func arrived(t *testing.T, p *Proxy, id string) Arrival {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := p.WaitArrival(ctx, id)
	require.NoError(t, err)
	return a
}

func recv(t *testing.T, ch <-chan reply) reply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no reply within 20s")
		return reply{}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	s := strings.TrimSpace(string(data))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
