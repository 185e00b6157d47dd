package interrupt

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// The first signal cancels stop and not now, the second cancels now; each context carries
// its signal; one already waiting when the watch starts is taken before Watch returns.
func TestWatchStopsOnTheFirstAndNowOnTheSecond(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	stop, now, release := Watch(sigs)
	defer release()
	if stop.Err() != nil || now.Err() != nil {
		t.Fatal("cancelled before any signal")
	}
	if SignalOf(stop) != nil {
		t.Fatal("a signal before any signal")
	}

	sigs <- syscall.SIGTERM
	waitDone(t, stop, "the first signal did not cancel stop")
	if now.Err() != nil {
		t.Fatal("now cancelled by the first signal")
	}
	if got := SignalOf(stop); got != syscall.SIGTERM {
		t.Fatalf("SignalOf(stop) = %v, want the first signal", got)
	}

	sigs <- os.Interrupt
	waitDone(t, now, "the second signal did not cancel now")
	if got := SignalOf(now); got != os.Interrupt {
		t.Fatalf("SignalOf(now) = %v, want the second signal", got)
	}
	child, cancel := context.WithCancel(stop)
	defer cancel()
	if got := SignalOf(child); got != syscall.SIGTERM {
		t.Fatalf("SignalOf(a context derived from stop) = %v, want the first signal", got)
	}
}

func TestWatchTakesASignalWaitingAtTheStart(t *testing.T) {
	waiting := make(chan os.Signal, 1)
	waiting <- os.Interrupt
	stop, now, release := Watch(waiting)
	defer release()
	if stop.Err() == nil {
		t.Fatal("a signal waiting at the start is not taken before Watch returns")
	}
	if now.Err() != nil {
		t.Fatal("one waiting signal cancelled now")
	}
}

func TestReleaseCancelsWithoutASignal(t *testing.T) {
	stop, now, release := Watch(nil)
	release()
	if stop.Err() == nil || now.Err() == nil {
		t.Fatal("release left a context running")
	}
	if SignalOf(stop) != nil || SignalOf(now) != nil || SignalOf(nil) != nil || SignalOf(context.Background()) != nil {
		t.Fatal("a signal where none came")
	}
	if Done(nil) != nil {
		t.Fatal("Done(nil) must never close")
	}
}

func waitDone(t *testing.T, ctx context.Context, msg string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal(msg)
	}
}
