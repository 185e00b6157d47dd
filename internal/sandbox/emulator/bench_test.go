package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const benchRecords = 10000

// fill inserts n CSV-app records (keys bench-00000…) with POST records.json, 100 per request,
// from 4 workers, and returns the elapsed time.
func fill(b *testing.B, c *raw, csv AppInfo, n int) time.Duration {
	b.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	chunks := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := range chunks {
				batch := make([]any, 0, 100)
				for i := from; i < min(from+100, n); i++ {
					batch = append(batch, rec("test_key", fmt.Sprintf("bench-%05d", i), "test_value", strings.Repeat("v", 32)))
				}
				r := c.do("POST", "/k/v1/records.json", csv.Tokens["full"], map[string]any{"app": csv.ID, "records": batch})
				if r.status != 200 {
					b.Errorf("bulk insert at %d: %d %s", from, r.status, r.body)
				}
			}
		}()
	}
	for from := 0; from < n; from += 100 {
		chunks <- from
	}
	close(chunks)
	wg.Wait()
	return time.Since(start)
}

// BenchmarkBulkInsert10k: target ≥ 5,000 records/s.
func BenchmarkBulkInsert10k(b *testing.B) {
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := startTest(b, Options{})
		c := newRaw(b, s)
		csv := appInfo(b, s, "csv")
		b.StartTimer()
		total += fill(b, c, csv, benchRecords)
	}
	b.ReportMetric(float64(benchRecords*b.N)/total.Seconds(), "records/s")
}

// BenchmarkQueryUniqueIn: `test_key in (…10 keys…)` on 10,000 records; target p50 ≤ 5 ms.
func BenchmarkQueryUniqueIn(b *testing.B) {
	s := startTest(b, Options{})
	c := newRaw(b, s)
	csv := appInfo(b, s, "csv")
	fill(b, c, csv, benchRecords)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		keys := make([]string, 10)
		for k := range keys {
			keys[k] = fmt.Sprintf(`"bench-%05d"`, (i*7919+k*997)%benchRecords)
		}
		t0 := time.Now()
		r := c.get("/k/v1/records.json", csv.Tokens["read"], url.Values{"app": {csv.ID}, "query": {"test_key in (" + strings.Join(keys, ",") + ")"}})
		lat = append(lat, time.Since(t0))
		require.Equal(b, 200, r.status)
		require.Len(b, records(r), 10)
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkQueryScan: a non-indexed condition over 10,000 records (full scan), for reference.
func BenchmarkQueryScan(b *testing.B) {
	s := startTest(b, Options{})
	c := newRaw(b, s)
	csv := appInfo(b, s, "csv")
	fill(b, c, csv, benchRecords)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := c.get("/k/v1/records.json", csv.Tokens["read"], url.Values{"app": {csv.ID}, "query": {`test_value != "x" order by test_key desc limit 100`}})
		require.Equal(b, 200, r.status)
	}
}

// BenchmarkCursorRead10k reads all 10,000 records through a cursor of size 500.
func BenchmarkCursorRead10k(b *testing.B) {
	s := startTest(b, Options{})
	c := newRaw(b, s)
	csv := appInfo(b, s, "csv")
	fill(b, c, csv, benchRecords)
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r := c.do("POST", "/k/v1/records/cursor.json", csv.Tokens["read"], map[string]any{"app": csv.ID, "size": 500})
		require.Equal(b, 200, r.status)
		id := r.json["id"].(string)
		n := 0
		for {
			// Decoded shallowly: the figure is about the emulator, not the test's JSON decoding.
			req, err := http.NewRequest("GET", s.BaseURL()+"/k/v1/records/cursor.json?id="+id, nil)
			require.NoError(b, err)
			req.Header.Set("X-Cybozu-API-Token", csv.Tokens["read"])
			res, err := c.hc.Do(req)
			require.NoError(b, err)
			var page struct {
				Records []json.RawMessage `json:"records"`
				Next    bool              `json:"next"`
			}
			err = json.NewDecoder(res.Body).Decode(&page)
			res.Body.Close()
			require.NoError(b, err)
			require.Equal(b, 200, res.StatusCode)
			n += len(page.Records)
			if !page.Next {
				break
			}
		}
		total += time.Since(t0)
		require.Equal(b, benchRecords, n)
	}
	b.ReportMetric(float64(benchRecords*b.N)/total.Seconds(), "records/s")
}
