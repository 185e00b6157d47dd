// Package wait is the one way flowtest steps wait for something to happen.
//
// A step never sleeps a fixed time hoping a state was reached: it names what it
// awaits, bounds the wait, and polls a condition that reports what it saw. When the
// limit passes, the error says what was awaited, the limit, and the last
// observation and error, so a failed scenario explains itself. Waits that run longer
// than a few seconds (lease expiry takes minutes) print progress lines so an
// operator watching a serial run sees why it is quiet. Steps take their bounds from
// the table of named Limits (For), which one setting, FLOWTEST_TIMEOUT_SCALE,
// stretches for a slow tenant; every finished wait is reported to Config.OnDone for
// the scenario record.
package wait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Defaults mirror the original harness's waitFor (60 s / 500 ms).
const (
	DefaultTimeout  = 60 * time.Second
	DefaultInterval = 500 * time.Millisecond
)

// Cond is polled until it reports done. observation is a short description of
// what it saw (kept for progress lines and the timeout message). A non-nil err is
// not fatal: it is remembered and polling continues, because transient errors
// (a record not yet written, a process not yet started) are the normal case while
// waiting. Wrap an error with Permanent to stop waiting at once.
type Cond func(ctx context.Context) (done bool, observation string, err error)

// ErrTimeout is matched by errors.Is on every *TimeoutError.
var ErrTimeout = errors.New("wait timed out")

// TimeoutError is returned when the condition did not hold within the limit, or
// the caller's context ended first.
type TimeoutError struct {
	What            string
	Timeout         time.Duration // the bound actually used (scaled, for a named Limit)
	Elapsed         time.Duration
	Attempts        int
	LastObservation string
	LastErr         error
	// Cause is set when the caller's context ended before the limit.
	Cause error
	// Limit names the Limit the bound came from ("" for Until's explicit bounds) and
	// Scale is the factor applied to it, so a timeout tells the operator which knob to turn.
	Limit string
	Scale float64
}

func (e *TimeoutError) Error() string {
	var b strings.Builder
	if e.Cause != nil {
		fmt.Fprintf(&b, "gave up waiting for %s after %s (limit %s%s): %v", e.What, round(e.Elapsed), round(e.Timeout), e.limitName(), e.Cause)
	} else {
		fmt.Fprintf(&b, "timed out after %s%s waiting for %s", round(e.Timeout), e.limitName(), e.What)
	}
	fmt.Fprintf(&b, " (%d checks)", e.Attempts)
	if e.LastObservation != "" {
		fmt.Fprintf(&b, "; last observation: %s", e.LastObservation)
	}
	if e.LastErr != nil {
		fmt.Fprintf(&b, "; last error: %v", e.LastErr)
	}
	if e.LastObservation == "" && e.LastErr == nil {
		b.WriteString("; nothing was observed")
	}
	return b.String()
}

// limitName is " [RunStatus]" or " [RunStatus ×3]" for a named limit, "" otherwise.
func (e *TimeoutError) limitName() string {
	if e.Limit == "" {
		return ""
	}
	if e.Scale > 0 && e.Scale != 1 {
		return fmt.Sprintf(" [%s ×%s]", e.Limit, strconv.FormatFloat(e.Scale, 'f', -1, 64))
	}
	return " [" + e.Limit + "]"
}

// Is makes errors.Is(err, ErrTimeout) true, and errors.Is(err, context.Canceled /
// DeadlineExceeded) true when the caller's context ended the wait.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Unwrap exposes the context cause (if any) and the last condition error.
func (e *TimeoutError) Unwrap() []error {
	var errs []error
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	if e.LastErr != nil {
		errs = append(errs, e.LastErr)
	}
	return errs
}

type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent marks a condition error as final: Until returns it immediately
// (wrapped with what was awaited) instead of polling again.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// Config controls progress output. It travels in the context (see WithConfig) so
// each scenario can route progress lines to its own log without package-level state.
type Config struct {
	// Progress receives progress lines; nil means os.Stderr. Use io.Discard to silence.
	Progress io.Writer
	// ProgressAfter is how long a wait runs before the first progress line (default 5 s).
	ProgressAfter time.Duration
	// ProgressEvery is the spacing of later progress lines (default 10 s).
	ProgressEvery time.Duration
	// Scale multiplies the bound of every named Limit (For, Limit.In), so one setting
	// (FLOWTEST_TIMEOUT_SCALE, e.g. 3 for a slow live tenant) stretches every wait the
	// steps name instead of each step growing its own knob. <= 0 means 1. Until's
	// explicit bounds are not scaled: they are the caller's own decision.
	Scale float64
	// OnDone, if set, hears about every wait when it ends, however it ended, so the
	// scenario record can show what was awaited and for how long.
	OnDone func(Record)

	// gapTaken, set by this package's tests, hears each gap before it is waited, so the
	// schedule a wait really follows is checked without a clock.
	gapTaken func(time.Duration)
}

type configKey struct{}

// WithConfig returns a context whose waits use cfg.
func WithConfig(ctx context.Context, cfg Config) context.Context {
	return context.WithValue(ctx, configKey{}, cfg)
}

func configFrom(ctx context.Context) Config {
	cfg, _ := ctx.Value(configKey{}).(Config)
	if cfg.Progress == nil {
		cfg.Progress = os.Stderr
	}
	if cfg.ProgressAfter <= 0 {
		cfg.ProgressAfter = 5 * time.Second
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 10 * time.Second
	}
	return cfg
}

// Until polls cond every interval (a fixed gap) until it reports done, returns a permanent
// error, the timeout passes, or ctx ends. timeout <= 0 means DefaultTimeout and
// interval <= 0 means DefaultInterval. cond is called at once, then after each
// interval; each call gets a context that ends at the overall limit, so a hanging
// check cannot stretch the wait. The returned error is a *TimeoutError (or the
// permanent error wrapped with what was awaited). The timeout is used as given;
// waits the steps name should use For, whose bound follows the configured scale.
func Until(ctx context.Context, what string, timeout, interval time.Duration, cond Cond) error {
	return until(ctx, configFrom(ctx), "", what, timeout, interval, interval, cond)
}

// For is Until with l's bound (scaled by the context's Config.Scale), checking at l's
// growing gaps (Gap).
func For(ctx context.Context, l Limit, what string, cond Cond) error {
	cfg := configFrom(ctx)
	return until(ctx, cfg, l.Name, what, l.scaled(cfg.Scale), l.Interval, l.MaxInterval, cond)
}

// Limit is a named, scalable wait bound. Steps wait with For and one of the limits
// below, so every bound lives in one table and one setting stretches them all.
//
// Polls start Interval apart and the gap grows by half each poll up to MaxInterval: what
// is awaited mostly arrives soon (a process exits, a record is written), and a wait that
// runs long should not keep reading the tenant at the pace of its first second — kintone
// counts every request against the app's daily budget. Neither is scaled: a slower tenant
// needs longer bounds, not sparser polls.
type Limit struct {
	Name        string
	Base        time.Duration // the bound at scale 1
	Interval    time.Duration // the first gap between checks
	MaxInterval time.Duration // the gap the checks grow to (<= Interval: a fixed gap)
}

// In returns l's bound scaled by the scale in ctx's Config.
func (l Limit) In(ctx context.Context) time.Duration {
	return l.scaled(configFrom(ctx).Scale)
}

func (l Limit) scaled(scale float64) time.Duration {
	if scale <= 0 || scale == 1 || math.IsNaN(scale) {
		return l.Base
	}
	d := float64(l.Base) * scale
	if d >= math.MaxInt64 { // a huge scale must not wrap around into a negative bound
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

// Gap is the time between check n and check n+1 (n from 1) of a wait whose checks start
// interval apart and grow by half each time up to maxInterval. It is a pure function so
// the schedule is tested without a clock.
func Gap(interval, maxInterval time.Duration, n int) time.Duration {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if maxInterval <= interval {
		return interval
	}
	g := float64(interval)
	for i := 1; i < n && g < float64(maxInterval); i++ {
		g *= 1.5
	}
	return min(time.Duration(g), maxInterval)
}

// The named limits the steps wait with. Bases are what the sandbox and a responsive
// tenant need with room to spare; FLOWTEST_TIMEOUT_SCALE stretches them for slow ones.
// The caps keep what a step does next on time: a step acts within one gap of what it
// awaited happening.
var (
	// ProcessExit: a FlowNet or kSQL-Flow child to exit (a whole network run).
	ProcessExit = Limit{"ProcessExit", 10 * time.Minute, 100 * time.Millisecond, time.Second}
	// RunStatus: the NETWORK_RUN record to reach a status (a kintone read per check).
	RunStatus = Limit{"RunStatus", 2 * time.Minute, 250 * time.Millisecond, 2 * time.Second}
	// RunningAttempt: a node's attempt to be RUNNING (kintone reads; the node then runs
	// for seconds, so a step acting on it has time).
	RunningAttempt = Limit{"RunningAttempt", 2 * time.Minute, 200 * time.Millisecond, time.Second}
	// JobLogRunning: a kSQL-Flow JOB log row to be RUNNING.
	JobLogRunning = Limit{"JobLogRunning", time.Minute, 100 * time.Millisecond, 500 * time.Millisecond}
	// LeaseExpiry: a lock or claim lease to expire (minutes by design). The gap stays at
	// one second: these waits end at a deadline a step must act just after (or a few
	// seconds before), so a growing gap would overshoot it.
	LeaseExpiry = Limit{"LeaseExpiry", 5 * time.Minute, time.Second, time.Second}
	// RequestState: an operation request to reach a state (kintone reads).
	RequestState = Limit{"RequestState", 2 * time.Minute, 250 * time.Millisecond, 2 * time.Second}
	// BarrierArrival: a request to arrive at a fault-proxy barrier (polled fast and capped
	// low: the request is being held, and the scenario's timing depends on noticing it).
	BarrierArrival = Limit{"BarrierArrival", time.Minute, 20 * time.Millisecond, 100 * time.Millisecond}
	// BlockedRequests: a fault proxy to have dropped a number of requests (FlowNet's drain
	// retries during an outage: one every 2 s, a heartbeat every interval; the original
	// waited 45 s for the first).
	BlockedRequests = Limit{"BlockedRequests", time.Minute, 100 * time.Millisecond, 500 * time.Millisecond}
	// JobLogTerminal: a kSQL-Flow child's JOB log row to leave RUNNING (a whole node; kintone
	// reads).
	JobLogTerminal = Limit{"JobLogTerminal", 3 * time.Minute, 200 * time.Millisecond, 2 * time.Second}
)

// Outcome is how a wait ended.
type Outcome string

// The spellings are the scenario record's (results.WaitReached …).
const (
	Reached  Outcome = "reached"
	TimedOut Outcome = "timed-out"
	// GaveUp: the caller's context ended first, or the condition returned a Permanent error.
	GaveUp Outcome = "gave-up"
)

// Record is what Config.OnDone hears about one finished wait.
type Record struct {
	Name            string        // the Limit's name; "" for Until's explicit bounds
	What            string        // what was awaited
	Limit           time.Duration // the bound used (scaled for a named Limit)
	Elapsed         time.Duration
	Outcome         Outcome
	Checks          int
	LastObservation string
	LastErr         string // the last condition error, or the permanent one, or why the caller gave up
}

func until(ctx context.Context, cfg Config, name, what string, timeout, interval, maxInterval time.Duration, cond Cond) error {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	w := &waiter{cfg: cfg, name: name, what: what, timeout: timeout, start: time.Now()}
	w.nextProgress = w.start.Add(cfg.ProgressAfter)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C // the first check runs immediately below

	for {
		w.attempts++
		ok, obs, err := cond(wctx)
		if obs != "" {
			w.lastObs = obs
		}
		if err != nil {
			var perm permanentError
			if errors.As(err, &perm) {
				w.done(GaveUp, perm.err)
				return fmt.Errorf("waiting for %s: %w", what, perm.err)
			}
			// A check cut short by the overall deadline says nothing new; keep the
			// earlier, more useful error.
			if wctx.Err() == nil || w.lastErr == nil {
				w.lastErr = err
			}
		} else if ok {
			if w.progressed {
				fmt.Fprintf(cfg.Progress, "wait: %s reached after %s\n", what, round(time.Since(w.start)))
			}
			w.done(Reached, nil)
			return nil
		} else {
			w.lastErr = nil // the latest check succeeded; an older error is stale
		}
		w.reportProgress(time.Now())

		gap := Gap(interval, maxInterval, w.attempts)
		if cfg.gapTaken != nil {
			cfg.gapTaken(gap)
		}
		timer.Reset(gap)
		select {
		case <-timer.C:
		case <-wctx.Done():
			return w.ended(ctx)
		}
	}
}

// waiter is the state of one wait in until: what it has seen so far and when it last
// reported progress.
type waiter struct {
	cfg          Config
	name, what   string
	timeout      time.Duration
	start        time.Time
	nextProgress time.Time
	progressed   bool // a progress line was written
	lastObs      string
	lastErr      error
	attempts     int
}

// done tells cfg.OnDone, when set, how the wait ended.
func (w *waiter) done(outcome Outcome, err error) {
	if w.cfg.OnDone == nil {
		return
	}
	r := Record{Name: w.name, What: w.what, Limit: w.timeout, Elapsed: time.Since(w.start), Outcome: outcome,
		Checks: w.attempts, LastObservation: w.lastObs}
	if err != nil {
		r.LastErr = err.Error()
	}
	w.cfg.OnDone(r)
}

// reportProgress writes a "still waiting" line with the latest observation and error once
// the next progress time has come.
func (w *waiter) reportProgress(now time.Time) {
	if now.Before(w.nextProgress) {
		return
	}
	w.progressed = true
	line := fmt.Sprintf("wait: still waiting for %s (%s of %s)", w.what, round(now.Sub(w.start)), round(w.timeout))
	if w.lastObs != "" {
		line += ": " + w.lastObs
	}
	if w.lastErr != nil {
		line += fmt.Sprintf(" [last error: %v]", w.lastErr)
	}
	fmt.Fprintln(w.cfg.Progress, line)
	w.nextProgress = now.Add(w.cfg.ProgressEvery)
}

// ended is the error of a wait whose bound passed (timed out) or whose caller's context ctx
// ended first (gave up, with the cause).
func (w *waiter) ended(ctx context.Context) error {
	te := &TimeoutError{What: w.what, Timeout: w.timeout, Elapsed: time.Since(w.start), Attempts: w.attempts,
		LastObservation: w.lastObs, LastErr: w.lastErr, Limit: w.name, Scale: w.cfg.Scale}
	outcome, why := TimedOut, w.lastErr
	if ctx.Err() != nil {
		te.Cause = context.Cause(ctx)
		outcome, why = GaveUp, te.Cause
		if w.lastErr != nil {
			why = fmt.Errorf("%w; last error: %v", te.Cause, w.lastErr)
		}
	}
	w.done(outcome, why)
	return te
}

// round keeps durations in messages readable (4m59s, 1.2s, 350ms, 42µs): the precision
// shrinks with the size, since nobody reads nanoseconds of a five-minute wait.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	default:
		return d.Round(time.Microsecond)
	}
}
