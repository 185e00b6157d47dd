package emulator

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// kintone's request limits (kintone-api.md §8), as a busy tenant shows them:
//
//   - Concurrency: more than Options.ConcurrencyLimit requests in flight on the domain (100
//     on kintone) and the extra one is answered 429 GAIA_TO04 before it is looked at. Every
//     response carries X-ConcurrencyLimit-Limit and X-ConcurrencyLimit-Running (the
//     requests in flight, this one included), as kintone's do.
//   - Daily requests per app (10,000 standard, 100,000 wide course): kintone does not refuse
//     past the limit, it sends the administrator a warning e-mail. The emulator keeps
//     serving too and writes the e-mail as one line to Options.Warnings, once per app and
//     day. kintone's day turns at 09:00 JST, which is 00:00 UTC, so the day is the UTC date.

// defaultConcurrencyLimit is kintone's per-domain limit.
const defaultConcurrencyLimit = 100

// dailyRequests counts requests per app and kintone day.
type dailyRequests struct {
	limit int64     // 0: count, never warn
	warn  io.Writer // where the warning "e-mail" goes
	now   func() time.Time

	mu     sync.Mutex
	day    string
	counts map[string]int64
	warned map[string]bool
}

func newDailyRequests(limit int64, warn io.Writer, now func() time.Time) *dailyRequests {
	if warn == nil {
		warn = io.Discard
	}
	return &dailyRequests{limit: limit, warn: warn, now: now, counts: map[string]int64{}, warned: map[string]bool{}}
}

// count adds one request on app a (id, role for the warning).
func (d *dailyRequests) count(id, role string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.turnDay()
	d.counts[id]++
	if n := d.counts[id]; d.limit > 0 && n > d.limit && !d.warned[id] {
		d.warned[id] = true
		fmt.Fprintf(d.warn, "flowsandbox kintone: daily request limit of app %s (%s) exceeded: request %d of a limit of %d on %s; kintone sends the administrator a warning e-mail and keeps serving, so does the emulator\n",
			id, role, n, d.limit, d.day)
	}
}

// turnDay starts a new day's counts at kintone's reset (00:00 UTC = 09:00 JST).
func (d *dailyRequests) turnDay() {
	day := d.now().UTC().Format(time.DateOnly)
	if day != d.day {
		d.day = day
		clear(d.counts)
		clear(d.warned)
	}
}

// AppRequests is one app's request count of the current kintone day.
type AppRequests struct {
	AppID    string `json:"app_id"`
	Requests int64  `json:"requests"`
	// OverLimit: more than Options.DailyRequestLimit requests today (kintone would have sent
	// its warning e-mail).
	OverLimit bool `json:"over_limit"`
}

// DailyRequests lists today's requests per app (apps with none are left out), in app id
// order. A request counts on the app whose API token authenticated it.
func (s *Server) DailyRequests() []AppRequests {
	d := s.daily
	d.mu.Lock()
	defer d.mu.Unlock()
	d.turnDay()
	out := make([]AppRequests, 0, len(d.counts))
	for id, n := range d.counts {
		out = append(out, AppRequests{AppID: id, Requests: n, OverLimit: d.limit > 0 && n > d.limit})
	}
	sort.Slice(out, func(i, j int) bool { // numeric ids: shorter first, then by digits
		a, b := out[i].AppID, out[j].AppID
		return len(a) < len(b) || len(a) == len(b) && a < b
	})
	return out
}
