// Package wait is the one way flowtest steps wait for something to happen.
//
// A step never sleeps a fixed time hoping a state was reached: it names what it
// awaits, bounds the wait, and polls a condition that reports what it saw. When the
// limit passes, the error says what was awaited, the limit, and the last
// observation and error, so a failed scenario explains itself. Waits that run longer
// than a few seconds (lease expiry takes minutes) print progress lines so an
// operator watching a serial run sees why it is quiet.
package wait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
	Timeout         time.Duration
	Elapsed         time.Duration
	Attempts        int
	LastObservation string
	LastErr         error
	// Cause is set when the caller's context ended before the limit.
	Cause error
}

func (e *TimeoutError) Error() string {
	var b strings.Builder
	if e.Cause != nil {
		fmt.Fprintf(&b, "gave up waiting for %s after %s (limit %s): %v", e.What, round(e.Elapsed), e.Timeout, e.Cause)
	} else {
		fmt.Fprintf(&b, "timed out after %s waiting for %s", e.Timeout, e.What)
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

// Until polls cond every interval until it reports done, returns a permanent
// error, the timeout passes, or ctx ends. timeout <= 0 means DefaultTimeout and
// interval <= 0 means DefaultInterval. cond is called at once, then after each
// interval; each call gets a context that ends at the overall limit, so a hanging
// check cannot stretch the wait. The returned error is a *TimeoutError (or the
// permanent error wrapped with what was awaited).
func Until(ctx context.Context, what string, timeout, interval time.Duration, cond Cond) error {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	cfg := configFrom(ctx)
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	nextProgress := start.Add(cfg.ProgressAfter)
	progressed := false
	var lastObs string
	var lastErr error
	attempts := 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C // the first check runs immediately below

	for {
		attempts++
		done, obs, err := cond(wctx)
		if obs != "" {
			lastObs = obs
		}
		if err != nil {
			var perm permanentError
			if errors.As(err, &perm) {
				return fmt.Errorf("waiting for %s: %w", what, perm.err)
			}
			// A check cut short by the overall deadline says nothing new; keep the
			// earlier, more useful error.
			if wctx.Err() == nil || lastErr == nil {
				lastErr = err
			}
		} else if done {
			if progressed {
				fmt.Fprintf(cfg.Progress, "wait: %s reached after %s\n", what, round(time.Since(start)))
			}
			return nil
		} else {
			lastErr = nil // the latest check succeeded; an older error is stale
		}

		now := time.Now()
		if !now.Before(nextProgress) {
			progressed = true
			line := fmt.Sprintf("wait: still waiting for %s (%s of %s)", what, round(now.Sub(start)), timeout)
			if lastObs != "" {
				line += ": " + lastObs
			}
			if lastErr != nil {
				line += fmt.Sprintf(" [last error: %v]", lastErr)
			}
			fmt.Fprintln(cfg.Progress, line)
			nextProgress = now.Add(cfg.ProgressEvery)
		}

		timer.Reset(interval)
		select {
		case <-timer.C:
		case <-wctx.Done():
			te := &TimeoutError{What: what, Timeout: timeout, Elapsed: time.Since(start), Attempts: attempts,
				LastObservation: lastObs, LastErr: lastErr}
			if ctx.Err() != nil {
				te.Cause = context.Cause(ctx)
			}
			return te
		}
	}
}

func round(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
