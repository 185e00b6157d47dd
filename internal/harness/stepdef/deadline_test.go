package stepdef

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitsForCancel is a step that waits on its context and fails with the wait's own words.
func waitsForCancel(ctx context.Context) error {
	<-ctx.Done()
	return fmt.Errorf("gave up waiting for holder-trial-1 to exit (limit 10m0s): %w", ctx.Err())
}

// The step's own deadline ended it: its error is named once by the deadline and the flag.
func TestFiredDeadlineIsNamedOnce(t *testing.T) {
	fn := Wrap(waitsForCancel, 20*time.Millisecond, "--step-timeout").(func(context.Context) error)
	err := fn(context.Background())
	assert.EqualError(t, err, "step deadline --step-timeout 20ms fired: gave up waiting for holder-trial-1 to exit (limit 10m0s): context deadline exceeded")
	var de *DeadlineError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 20*time.Millisecond, de.Timeout)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the cause stays reachable")
}

// A step that had to be abandoned says the same, and is still ErrStepTimeout.
func TestAbandonedStepNamesTheDeadline(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	fn := Wrap(func() error { <-block; return nil }, 10*time.Millisecond, "--step-timeout").(func() error)
	err := fn()
	require.ErrorIs(t, err, ErrStepTimeout)
	assert.Contains(t, err.Error(), "step deadline --step-timeout 10ms fired: ")
}

// An error before the deadline, or an interrupt of the scenario, is not the deadline's.
func TestOtherEndsAreNotTheDeadlines(t *testing.T) {
	fn := Wrap(func(context.Context) error { return errors.New("deliberate") }, time.Minute, "--step-timeout").(func(context.Context) error)
	assert.EqualError(t, fn(context.Background()), "deliberate")

	base, cancel := context.WithCancel(context.Background())
	cancel()
	fn = Wrap(waitsForCancel, time.Minute, "--step-timeout").(func(context.Context) error)
	err := fn(base)
	assert.NotContains(t, err.Error(), "step deadline")
	assert.ErrorIs(t, err, context.Canceled)
}
