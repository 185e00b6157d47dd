package ksqlflow

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkLongreadFixtures measures the long-read fixtures at the latency the sandbox runner
// sets (500 ms per request for the customers and deals roles, see job-longread.sql), so the
// ~6 s / ~10 s windows the M-series relies on are checked by measurement:
//
//	go test -run '^$' -bench LongreadFixtures -benchtime 1x ./sandbox/ksqlflow
func BenchmarkLongreadFixtures(b *testing.B) {
	for _, f := range []struct{ file, job string }{{"job-longread.sql", "m5_shared_read"}, {"m6-longread.sql", "m6_longread"}} {
		b.Run(f.file, func(b *testing.B) {
			e := startEmu(b, map[string]time.Duration{"customers": 500 * time.Millisecond, "deals": 500 * time.Millisecond})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				attempt := fmt.Sprintf("bench_%d", i)
				args := []string{"run", "-f", fixturePath(f.file), "--profile", testProfile, "--config", e.cfgPath,
					"--result-json", "-", "--correlation-id", "bench", "--attempt-id", attempt, "--expected-job-id", f.job}
				start := time.Now()
				code, _, errOut := invoke(args...)
				if code != 0 {
					b.Fatalf("exit %d: %s", code, errOut)
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/job")
			}
		})
	}
}
