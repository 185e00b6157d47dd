package faultproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Speed goals, measured here rather than asserted in tests:
//   added latency of the proxy vs direct on loopback: p99 ≤ 1 ms
//   barrier release, in-process: p99 ≤ 5 ms; by release file: p99 ≤ 20 ms
// Run: go test -run '^$' -bench . -benchtime 2000x ./harness/faultproxy
// The p99 of a loaded shared machine is mostly scheduling; BenchmarkPassPathWork
// (cpu_bench_test.go) measures the proxy's own work per request, with -benchmem.

func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func keepAliveClient(b *testing.B, caFiles ...string) *http.Client {
	pool := x509.NewCertPool()
	for _, f := range caFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		pool.AppendCertsFromPEM(data)
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 4}}
}

func timedPut(b *testing.B, c *http.Client, u, body string) time.Duration {
	start := time.Now()
	req, _ := http.NewRequest("PUT", u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Cybozu-API-Token", "bench-token")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("status %d", resp.StatusCode)
	}
	return time.Since(start)
}

// A FlowNet-sized write: one record PUT with a few fields.
var benchBody = `{"app":7,"id":"42","revision":"3","record":{"status":{"value":"RUNNING"},"heartbeat_at":{"value":"2026-11-29T00:00:00Z"},"lease_expires_at":{"value":"2026-11-29T00:00:30Z"},"owner_invocation_id":{"value":"inv_0123456789abcdef"}}}`

func BenchmarkAddedLatency(b *testing.B) {
	for _, tc := range []struct {
		name    string
		tls     bool
		control bool
		// fault arms a fault the bench's PUTs match up to the app: the cost of matching
		// on every request while a scenario has a fault in place.
		fault bool
	}{{"http", false, false, false}, {"https", true, false, false}, {"https+controlfile", true, true, false}, {"https+fault-armed", true, false, true}} {
		b.Run(tc.name, func(b *testing.B) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"revision":"4"}`)
			})
			var srv *httptest.Server
			var upCA string
			if tc.tls {
				srv = httptest.NewTLSServer(h)
				upCA = filepath.Join(b.TempDir(), "up.pem")
				writePEM(b, upCA, srv.Certificate().Raw)
			} else {
				srv = httptest.NewServer(h)
			}
			defer srv.Close()
			opts := Options{Name: "bench", Upstream: srv.URL, UpstreamCA: upCA, TLS: tc.tls, LogDir: b.TempDir()}
			if tc.control {
				opts.ControlFile = filepath.Join(b.TempDir(), "control.txt")
				if err := os.WriteFile(opts.ControlFile, []byte("pass"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			p, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			if tc.fault {
				armElsewhereFault(b, p)
			}
			var direct, proxied *http.Client
			if tc.tls {
				direct, proxied = keepAliveClient(b, upCA), keepAliveClient(b, p.CAFile())
			} else {
				direct, proxied = keepAliveClient(b), keepAliveClient(b)
			}
			// Warm connections (TLS handshakes are not per-request costs).
			for i := 0; i < 20; i++ {
				timedPut(b, direct, srv.URL+"/k/v1/record.json", benchBody)
				timedPut(b, proxied, p.URL()+"/k/v1/record.json", benchBody)
			}
			var ds, ps []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Interleaved so both see the same machine load.
				ds = append(ds, timedPut(b, direct, srv.URL+"/k/v1/record.json", benchBody))
				ps = append(ps, timedPut(b, proxied, p.URL()+"/k/v1/record.json", benchBody))
			}
			b.StopTimer()
			b.ReportMetric(us(percentile(ds, 0.50)), "direct-p50-µs")
			b.ReportMetric(us(percentile(ds, 0.99)), "direct-p99-µs")
			b.ReportMetric(us(percentile(ps, 0.50)), "proxy-p50-µs")
			b.ReportMetric(us(percentile(ps, 0.99)), "proxy-p99-µs")
			b.ReportMetric(us(percentile(ps, 0.50)-percentile(ds, 0.50)), "added-p50-µs")
			b.ReportMetric(us(percentile(ps, 0.99)-percentile(ds, 0.99)), "added-p99-µs")
		})
	}
}

func writePEM(b *testing.B, path string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkBarrierRelease measures, per held request, the time from the release (a
// Release call, or the creation of the release file) to the client having its response.
func BenchmarkBarrierRelease(b *testing.B) {
	for _, byFile := range []bool{false, true} {
		name := "in-process"
		if byFile {
			name = "file"
		}
		b.Run(name, func(b *testing.B) {
			u := newUpstream(b)
			p := newProxy(b, u, nil)
			c := keepAliveClient(b, p.CAFile())
			dir := b.TempDir()
			var lat []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("bench_%d", i)
				bar := claimBarrier(id, PhaseBefore)
				rel := filepath.Join(dir, id+".release")
				if byFile {
					bar.Release = rel
				}
				if err := p.AddBarrier(bar); err != nil {
					b.Fatal(err)
				}
				done := make(chan time.Time, 1)
				go func() {
					req, _ := http.NewRequest("PUT", p.URL()+"/k/v1/record.json", strings.NewReader(claimBody))
					resp, err := c.Do(req)
					if err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					done <- time.Now()
				}()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if _, err := p.WaitArrival(ctx, id); err != nil {
					b.Fatal(err)
				}
				cancel()
				start := time.Now()
				if byFile {
					if err := os.WriteFile(rel, nil, 0o644); err != nil {
						b.Fatal(err)
					}
				} else if err := p.Release(id); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-done).Sub(start))
			}
			b.StopTimer()
			b.ReportMetric(ms(percentile(lat, 0.50)), "release-p50-ms")
			b.ReportMetric(ms(percentile(lat, 0.99)), "release-p99-ms")
			b.ReportMetric(ms(percentile(lat, 1)), "release-max-ms")
		})
	}
}
