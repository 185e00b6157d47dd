package wait

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func quiet() context.Context {
	return WithConfig(context.Background(), Config{Progress: io.Discard})
}

func TestUntilReturnsWhenConditionHolds(t *testing.T) {
	var n atomic.Int32
	err := Until(quiet(), "third check", time.Second, time.Millisecond, func(context.Context) (bool, string, error) {
		return n.Add(1) >= 3, "", nil
	})
	require.NoError(t, err)
	assert.Equal(t, int32(3), n.Load())
}

func TestUntilTimeoutNamesWhatLimitAndLastObservation(t *testing.T) {
	var n atomic.Int32
	err := Until(quiet(), "run RUNNING", 150*time.Millisecond, 10*time.Millisecond, func(context.Context) (bool, string, error) {
		i := n.Add(1)
		return false, fmt.Sprintf("status=PENDING check=%d", i), nil
	})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrTimeout)
	var te *TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "run RUNNING", te.What)
	assert.Equal(t, 150*time.Millisecond, te.Timeout)
	assert.Contains(t, err.Error(), "run RUNNING")
	assert.Contains(t, err.Error(), "150ms")
	assert.Contains(t, err.Error(), fmt.Sprintf("status=PENDING check=%d", n.Load()))
	assert.Nil(t, te.Cause)
}

func TestUntilKeepsLastErrorAndClearsItAfterSuccess(t *testing.T) {
	boom := errors.New("kintone 503")
	var n atomic.Int32
	err := Until(quiet(), "record", 100*time.Millisecond, 5*time.Millisecond, func(context.Context) (bool, string, error) {
		if n.Add(1) == 1 {
			return false, "", boom
		}
		return false, "still missing", nil
	})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "kintone 503", "a later successful check makes the old error stale")

	err = Until(quiet(), "record", 100*time.Millisecond, 5*time.Millisecond, func(context.Context) (bool, string, error) {
		return false, "", boom
	})
	require.Error(t, err)
	assert.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "last error: kintone 503")
}

func TestUntilPermanentErrorStopsAtOnce(t *testing.T) {
	bad := errors.New("record deleted")
	var n atomic.Int32
	err := Until(quiet(), "claim", time.Minute, time.Millisecond, func(context.Context) (bool, string, error) {
		n.Add(1)
		return false, "", Permanent(bad)
	})
	require.ErrorIs(t, err, bad)
	assert.NotErrorIs(t, err, ErrTimeout)
	assert.Contains(t, err.Error(), "waiting for claim")
	assert.Equal(t, int32(1), n.Load())
}

func TestUntilCallerCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(quiet())
	var n atomic.Int32
	err := Until(ctx, "poller exit", time.Minute, time.Millisecond, func(context.Context) (bool, string, error) {
		if n.Add(1) == 3 {
			cancel()
		}
		return false, "alive", nil
	})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, ErrTimeout)
	assert.Contains(t, err.Error(), "gave up waiting for poller exit")
}

func TestUntilCondContextEndsAtLimit(t *testing.T) {
	// A check that blocks on its context must not stretch the wait past the limit.
	start := time.Now()
	err := Until(quiet(), "slow check", 100*time.Millisecond, time.Millisecond, func(ctx context.Context) (bool, string, error) {
		<-ctx.Done()
		return false, "", ctx.Err()
	})
	require.ErrorIs(t, err, ErrTimeout)
	assert.Less(t, time.Since(start), 5*time.Second)
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestUntilPrintsProgressOnLongWaits(t *testing.T) {
	var out syncBuf
	ctx := WithConfig(context.Background(), Config{Progress: &out, ProgressAfter: 20 * time.Millisecond, ProgressEvery: 20 * time.Millisecond})
	var reached atomic.Bool
	err := Until(ctx, "lease expiry", 2*time.Second, 5*time.Millisecond, func(context.Context) (bool, string, error) {
		// Done only once a progress line has been written: no timing guess involved.
		if strings.Contains(out.String(), "still waiting") {
			reached.Store(true)
			return true, "", nil
		}
		return false, "stale_candidate=false", nil
	})
	require.NoError(t, err)
	require.True(t, reached.Load())
	assert.Contains(t, out.String(), "wait: still waiting for lease expiry")
	assert.Contains(t, out.String(), "stale_candidate=false")
	assert.Contains(t, out.String(), "wait: lease expiry reached after")
}

func TestUntilQuickWaitPrintsNothing(t *testing.T) {
	var out syncBuf
	ctx := WithConfig(context.Background(), Config{Progress: &out})
	require.NoError(t, Until(ctx, "quick", time.Second, time.Millisecond, func(context.Context) (bool, string, error) {
		return true, "", nil
	}))
	assert.Empty(t, out.String())
}
