package stepdef

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type key struct{}

func TestStepGetsDeadlineAndReturnsNormally(t *testing.T) {
	fn := Wrap(func(ctx context.Context, n int) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline")
		}
		if n != 7 {
			return errors.New("argument lost")
		}
		return nil
	}, time.Second, "").(func(context.Context, int) error)
	assert.NoError(t, fn(context.Background(), 7))
}

func TestErrorReturningStepTimesOut(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	fn := Wrap(func() error { <-block; return nil }, 50*time.Millisecond, "").(func() error)
	start := time.Now()
	err := fn()
	require.ErrorIs(t, err, ErrStepTimeout)
	assert.Less(t, time.Since(start), 50*time.Millisecond+Grace+time.Second)
}

func TestStepWithoutErrorResultPanicsOnTimeout(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	fn := Wrap(func() { <-block }, 20*time.Millisecond, "").(func())
	defer func() {
		p := recover()
		err, ok := p.(error)
		require.True(t, ok, "panic value %v", p)
		assert.ErrorIs(t, err, ErrStepTimeout)
	}()
	fn()
	t.Fatal("expected a panic")
}

// A returned context keeps the values the step added but not our deadline: the next step
// must not inherit a context cancelled when this step returned.
func TestReturnedContextOutlivesTheStep(t *testing.T) {
	fn := Wrap(func(ctx context.Context) (context.Context, error) {
		return context.WithValue(ctx, key{}, "v"), nil
	}, time.Second, "").(func(context.Context) (context.Context, error))
	out, err := fn(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "v", out.Value(key{}))
	assert.NoError(t, out.Err(), "the returned context is not cancelled")
	_, hasDeadline := out.Deadline()
	assert.False(t, hasDeadline)
}

func TestPanicIsReraisedOnCallersGoroutine(t *testing.T) {
	fn := Wrap(func() error { panic("boom") }, time.Second, "").(func() error)
	assert.PanicsWithValue(t, "boom", func() { _ = fn() })
}

func TestCancelledScenarioAbandonsIgnoringStep(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	fn := Wrap(func(ctx context.Context) error { <-block; return nil }, time.Hour, "").(func(context.Context) error)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := fn(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "interrupt")
}
