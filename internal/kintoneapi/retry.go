package kintoneapi

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backing off on kintone's 429.
//
// kintone refuses a request over its concurrency limit (100 per domain) with 429 GAIA_TO04
// (kintone-api.md §8). The limit is checked on arrival, before the request is read, so a
// GAIA_TO04 request was not processed and sending it again is safe for writes too; that is
// our reading of the limit's documentation, which does not say it in words. A 429 without
// GAIA_TO04 (a proxy's, say) is not known to be unprocessed: only reads are sent again.
//
// The product contract does not say what FlowNet does on 429 (it names only GAIA_CO02,
// CB_VA01 and GAIA_DA02, and retries control-plane transport failures every 2 s); kSQL-Flow
// reports a retry policy of its own (describe-profile: maxAttempts, initialDelayMs,
// maxDelayMs, respectRetryAfter). The shared client therefore does what a well-behaved
// kintone client does and what kSQL-Flow's policy describes: capped exponential backoff
// with jitter, a Retry-After header honoured when one comes (kintone is not documented to
// send one), and the caller's context ending the wait at once.

// Retry is how a client answers 429. The zero value sends every request once.
type Retry struct {
	// MaxAttempts counts every send, the first included; <= 1 sends once.
	MaxAttempts int
	// Initial is the backoff before the second send; each further one doubles, up to Max.
	Initial, Max time.Duration
	// Sleep waits d or until ctx ends (returning its error); nil waits on a timer. Tests
	// replace it to run the schedule without time passing.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1); nil uses math/rand/v2.
	Jitter func() float64
	// IgnoreRetryAfter: back off by the schedule alone (kSQL-Flow's respectRetryAfter=false).
	IgnoreRetryAfter bool
}

// DefaultRetry is what New gives a client: up to 8 sends, the backoffs 0.25 s, 0.5 s, 1 s,
// 2 s, 4 s, then 8 s (each jittered into its upper half; at most about 24 s in all), far
// longer than a burst of 100 requests in flight lasts. A caller with a deadline of its own
// (a heartbeat due before its lease ends) bounds the backoff with its context.
var DefaultRetry = Retry{MaxAttempts: 8, Initial: 250 * time.Millisecond, Max: 8 * time.Second}

// Backoff is the wait before send attempt+1 (attempt from 1): Initial·2^(attempt-1) capped
// at Max, of which the upper half is jittered ("equal jitter": never less than half the
// step, so clients refused together do not all come back together nor at once).
func (p Retry) Backoff(attempt int) time.Duration {
	step := p.Initial
	for i := 1; i < attempt && step < p.Max; i++ {
		step *= 2
	}
	step = min(step, p.Max)
	jitter := p.Jitter
	if jitter == nil {
		jitter = rand.Float64
	}
	half := step / 2
	return half + time.Duration(jitter()*float64(step-half))
}

// retryAfter reads a Retry-After header in seconds (the HTTP-date form is not used by
// kintone's front ends; it is ignored).
func retryAfter(h http.Header) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// resendable: may a request refused with this 429 be sent again?
func resendable(req *http.Request, ae *APIError) bool {
	if ae.Status != http.StatusTooManyRequests {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false // the body cannot be replayed
	}
	if ae.Code == "GAIA_TO04" {
		return true // refused on arrival: not processed
	}
	return isRead(req)
}

// isRead: a GET, or a POST that kintone runs as GET (X-HTTP-Method-Override).
func isRead(req *http.Request) bool {
	return req.Method == http.MethodGet ||
		req.Method == http.MethodPost && strings.EqualFold(req.Header.Get("X-HTTP-Method-Override"), http.MethodGet)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
