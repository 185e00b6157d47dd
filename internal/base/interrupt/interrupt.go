// Package interrupt turns a process's stop signals into the two contexts its commands wait
// on: the first signal asks for a graceful stop (finish the step under way, write what was
// done, exit 130), the second for a hard one (kill the children, exit at once). A command
// watches the signals once and hands the contexts down, so no layer below reads a signal
// channel of its own or counts signals again.
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Watch reads sigs until release is called: the first signal cancels stop, the second
// cancels now, each with the signal as its cause (SignalOf). A signal already waiting in sigs
// (Ctrl-C while the process started) is taken before Watch returns, so the command sees it
// before its first step. A nil sigs never stops. release ends the watch and cancels both
// contexts without a signal.
func Watch(sigs <-chan os.Signal) (stop, now context.Context, release func()) {
	stop, cancelStop := context.WithCancelCause(context.Background())
	now, cancelNow := context.WithCancelCause(context.Background())
	n := 0
	take := func(s os.Signal) {
		n++
		switch n {
		case 1:
			cancelStop(&signalled{s})
		case 2:
			cancelNow(&signalled{s})
		}
	}
	for pending := true; pending && n < 2; {
		select {
		case s := <-sigs:
			take(s)
		default:
			pending = false
		}
	}
	done := make(chan struct{})
	go func() {
		// Signals after the second are still read (and dropped): a full channel would make
		// os/signal drop them anyway, and nothing acts on a third.
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				take(s)
			}
		}
	}()
	return stop, now, func() {
		close(done)
		cancelStop(errReleased)
		cancelNow(errReleased)
	}
}

// errReleased is the cause of a context cancelled by release, not by a signal.
var errReleased = errors.New("interrupt watch released")

// signalled is the cause of a context a signal cancelled.
type signalled struct{ sig os.Signal }

func (s *signalled) Error() string { return fmt.Sprintf("interrupted by %v", s.sig) }

// SignalOf is the signal that cancelled ctx (stop or now of Watch, or a context derived from
// one), nil if ctx is nil, not cancelled or cancelled otherwise.
func SignalOf(ctx context.Context) os.Signal {
	if ctx == nil {
		return nil
	}
	var s *signalled
	if errors.As(context.Cause(ctx), &s) {
		return s.sig
	}
	return nil
}

// Done is ctx.Done(), or nil (a channel that never closes) for a nil ctx: what a select
// waits on for an optional stop context.
func Done(ctx context.Context) <-chan struct{} {
	if ctx == nil {
		return nil
	}
	return ctx.Done()
}
