package wait

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimitInScalesTheBaseOnly(t *testing.T) {
	l := Limit{Name: "RunStatus", Base: 2 * time.Minute, Interval: 250 * time.Millisecond}
	assert.Equal(t, 2*time.Minute, l.In(context.Background()), "no config: scale 1")
	assert.Equal(t, 2*time.Minute, l.In(WithConfig(context.Background(), Config{Scale: 0})), "unset scale is 1")
	assert.Equal(t, 2*time.Minute, l.In(WithConfig(context.Background(), Config{Scale: -2})), "a negative scale is ignored (config refuses it earlier)")
	assert.Equal(t, 6*time.Minute, l.In(WithConfig(context.Background(), Config{Scale: 3})))
	assert.Equal(t, 3*time.Minute, l.In(WithConfig(context.Background(), Config{Scale: 1.5})))
	assert.Equal(t, time.Minute, l.In(WithConfig(context.Background(), Config{Scale: 0.5})))
	assert.Equal(t, time.Duration(1<<63-1), l.In(WithConfig(context.Background(), Config{Scale: 1e300})), "no overflow into a negative bound")
}

func TestNamedLimitsTable(t *testing.T) {
	for _, c := range []struct {
		l             Limit
		name          string
		base, iv, max time.Duration
	}{
		{ProcessExit, "ProcessExit", 10 * time.Minute, 100 * time.Millisecond, time.Second},
		{RunStatus, "RunStatus", 2 * time.Minute, 250 * time.Millisecond, 2 * time.Second},
		{RunningAttempt, "RunningAttempt", 2 * time.Minute, 200 * time.Millisecond, time.Second},
		{JobLogRunning, "JobLogRunning", time.Minute, 100 * time.Millisecond, 500 * time.Millisecond},
		{LeaseExpiry, "LeaseExpiry", 5 * time.Minute, time.Second, time.Second},
		{RequestState, "RequestState", 2 * time.Minute, 250 * time.Millisecond, 2 * time.Second},
		{BarrierArrival, "BarrierArrival", time.Minute, 20 * time.Millisecond, 100 * time.Millisecond},
		{BlockedRequests, "BlockedRequests", time.Minute, 100 * time.Millisecond, 500 * time.Millisecond},
		{JobLogTerminal, "JobLogTerminal", 3 * time.Minute, 200 * time.Millisecond, 2 * time.Second},
	} {
		assert.Equal(t, Limit{c.name, c.base, c.iv, c.max}, c.l)
	}
}

func TestGapGrowsByHalfToTheCap(t *testing.T) {
	ms := time.Millisecond
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, Gap(100*ms, time.Second, n))
	}
	assert.Equal(t, []time.Duration{100 * ms, 150 * ms, 225 * ms, 337500 * time.Microsecond, 506250 * time.Microsecond,
		759375 * time.Microsecond, time.Second, time.Second}, got)
	assert.Equal(t, time.Second, Gap(100*ms, time.Second, 1<<30), "a long wait stays at the cap (and the loop ends)")
	assert.Equal(t, time.Second, Gap(time.Second, time.Second, 5), "cap equal to the interval: a fixed gap")
	assert.Equal(t, time.Second, Gap(time.Second, 0, 5), "no cap: a fixed gap")
	assert.Equal(t, DefaultInterval, Gap(0, 0, 3))
}

// For waits the growing gaps of its limit; Until keeps its fixed interval.
func TestForFollowsTheGapSchedule(t *testing.T) {
	var gaps []time.Duration
	ctx := WithConfig(context.Background(), Config{Progress: io.Discard, gapTaken: func(d time.Duration) { gaps = append(gaps, d) }})
	l := Limit{Name: "Growing", Base: time.Minute, Interval: time.Millisecond, MaxInterval: 3 * time.Millisecond}
	checks := 0
	require.NoError(t, For(ctx, l, "the sixth check", func(context.Context) (bool, string, error) {
		checks++
		return checks == 6, "", nil
	}))
	us := time.Microsecond
	assert.Equal(t, []time.Duration{1000 * us, 1500 * us, 2250 * us, 3000 * us, 3000 * us}, gaps)

	gaps, checks = nil, 0
	require.NoError(t, Until(ctx, "the third check", time.Minute, 2*time.Millisecond, func(context.Context) (bool, string, error) {
		checks++
		return checks == 3, "", nil
	}))
	assert.Equal(t, []time.Duration{2 * time.Millisecond, 2 * time.Millisecond}, gaps)
}

type recorder struct {
	mu   sync.Mutex
	recs []Record
}

func (r *recorder) add(rec Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) all() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.recs...)
}

// The scaled bound is the one that applies: a 40 ms base at scale 2 still holds after 50 ms.
func TestForUsesTheScaledBoundAndInterval(t *testing.T) {
	var rec recorder
	ctx := WithConfig(context.Background(), Config{Progress: io.Discard, Scale: 2, OnDone: rec.add})
	l := Limit{Name: "Quick", Base: 40 * time.Millisecond, Interval: 5 * time.Millisecond}
	start := time.Now()
	err := For(ctx, l, "the 50 ms mark", func(context.Context) (bool, string, error) {
		return time.Since(start) >= 50*time.Millisecond, "early", nil
	})
	require.NoError(t, err)
	recs := rec.all()
	require.Len(t, recs, 1)
	assert.Equal(t, "Quick", recs[0].Name)
	assert.Equal(t, 80*time.Millisecond, recs[0].Limit)
	assert.Equal(t, Reached, recs[0].Outcome)
	assert.Greater(t, recs[0].Checks, 1)

	err = For(WithConfig(context.Background(), Config{Progress: io.Discard, Scale: 3}), l, "never", func(context.Context) (bool, string, error) {
		return false, "status=PENDING", nil
	})
	var te *TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, 120*time.Millisecond, te.Timeout)
	assert.Contains(t, err.Error(), "timed out after 120ms [Quick ×3] waiting for never")
}

func TestRecordHookSeesEveryOutcome(t *testing.T) {
	var rec recorder
	ctx := WithConfig(context.Background(), Config{Progress: io.Discard, OnDone: rec.add})

	require.NoError(t, Until(ctx, "at once", time.Second, time.Millisecond, func(context.Context) (bool, string, error) {
		return true, "there", nil
	}))
	boom := errors.New("kintone 503")
	require.Error(t, Until(ctx, "never", 30*time.Millisecond, 5*time.Millisecond, func(context.Context) (bool, string, error) {
		return false, "status=PENDING", boom
	}))
	bad := errors.New("record deleted")
	require.Error(t, For(ctx, RunStatus, "a deleted run", func(context.Context) (bool, string, error) {
		return false, "", Permanent(bad)
	}))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.Error(t, For(cctx, LeaseExpiry, "lease expiry", func(context.Context) (bool, string, error) {
		return false, "stale_candidate=false", nil
	}))

	recs := rec.all()
	require.Len(t, recs, 4)
	assert.Equal(t, Record{What: "at once", Limit: time.Second, Elapsed: recs[0].Elapsed, Outcome: Reached, Checks: 1, LastObservation: "there"}, recs[0])

	assert.Equal(t, "", recs[1].Name)
	assert.Equal(t, TimedOut, recs[1].Outcome)
	assert.Equal(t, "status=PENDING", recs[1].LastObservation)
	assert.Equal(t, "kintone 503", recs[1].LastErr)
	assert.GreaterOrEqual(t, recs[1].Elapsed, 30*time.Millisecond)

	assert.Equal(t, "RunStatus", recs[2].Name)
	assert.Equal(t, GaveUp, recs[2].Outcome)
	assert.Equal(t, "record deleted", recs[2].LastErr)
	assert.Equal(t, 1, recs[2].Checks)

	assert.Equal(t, "LeaseExpiry", recs[3].Name)
	assert.Equal(t, 5*time.Minute, recs[3].Limit)
	assert.Equal(t, GaveUp, recs[3].Outcome)
	assert.Contains(t, recs[3].LastErr, "context canceled")
}

func TestRound(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want string
	}{
		{4*time.Minute + 59*time.Second + 184452676*time.Nanosecond, "4m59s"},
		{1234567890 * time.Nanosecond, "1.2s"},
		{350123456 * time.Nanosecond, "350ms"},
		{59960 * time.Millisecond, "1m0s"},
		{42345 * time.Nanosecond, "42µs"},
		{0, "0s"},
	} {
		assert.Equal(t, c.want, round(c.in).String(), "%d ns", int64(c.in))
	}
}

// No duration in a timeout message or progress line carries a long fraction.
func TestMessagesPrintRoundedDurations(t *testing.T) {
	te := &TimeoutError{What: "lease expiry", Timeout: 4*time.Minute + 59*time.Second + 184452676*time.Nanosecond, Attempts: 3}
	assert.Equal(t, "timed out after 4m59s waiting for lease expiry (3 checks); nothing was observed", te.Error())
	te.Cause, te.Elapsed = context.Canceled, 1234567890*time.Nanosecond
	te.Limit, te.Scale = "LeaseExpiry", 1
	assert.Equal(t, "gave up waiting for lease expiry after 1.2s (limit 4m59s [LeaseExpiry]): context canceled (3 checks); nothing was observed", te.Error())

	var out syncBuf
	ctx := WithConfig(context.Background(), Config{Progress: &out, ProgressAfter: time.Millisecond, ProgressEvery: time.Millisecond,
		Scale: 1.000123456})
	l := Limit{Name: "Odd", Base: 3 * time.Second, Interval: 2 * time.Millisecond}
	err := For(ctx, l, "a progress line", func(context.Context) (bool, string, error) {
		return strings.Count(out.String(), "still waiting") >= 2, "", nil
	})
	require.NoError(t, err)
	fraction := regexpLongFraction.FindString(out.String())
	assert.Empty(t, fraction, "unrounded duration in:\n%s", out.String())
	assert.Contains(t, out.String(), "of 3s)")
}

// A duration printed with more than three fractional digits (e.g. 4m59.184452676s).
var regexpLongFraction = regexp.MustCompile(`\d+\.\d{4,}(s|ms|µs)`)
