package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// cannedUpstream answers every request at once, so the benchmark below measures the
// proxy's own work per request (CPU and allocations) without network or scheduler
// noise, which dominate the tail of BenchmarkAddedLatency on a loaded machine.
type cannedUpstream struct{}

func (cannedUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"revision":"4"}`)), ContentLength: 16, Request: r}, nil
}

// BenchmarkPassPathWork: one FlowNet-sized PUT through the pass path, in process, with
// no fault and with one armed that the PUT matches up to its app.
func BenchmarkPassPathWork(b *testing.B) {
	for _, armed := range []bool{false, true} {
		name := "no-fault"
		if armed {
			name = "fault-armed"
		}
		b.Run(name, func(b *testing.B) {
			p, err := New(Options{Name: "bench", Upstream: "http://127.0.0.1:9", LogDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			p.rp.Transport = cannedUpstream{}
			if armed {
				armElsewhereFault(b, p)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("PUT", "/k/v1/record.json", strings.NewReader(benchBody))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				p.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

// armElsewhereFault arms a fault that the bench's PUTs match in all but the app, so
// every request goes through fault matching without being taken.
func armElsewhereFault(b *testing.B, p *Proxy) {
	if err := p.AddFault(Fault{ID: "elsewhere", Action: ActionRespond, Status: 409,
		Match: FaultMatch{Method: "PUT", Path: `^/k/v1/record\.json$`, App: "8", Field: "status"}}); err != nil {
		b.Fatal(err)
	}
}
