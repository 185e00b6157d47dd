// Package stepdef registers step definitions with a deadline. godog calls a step handler
// synchronously and has no per-step timeout, so a handler that blocks would hang the whole
// run. Every step registered here gets a context with a deadline and is called on its own
// goroutine; if it has not returned when the deadline (plus a short grace for the step to
// notice its context) has passed, the step fails with a timeout error and the run goes on.
// The abandoned goroutine is left to finish on its own; the scenario's cleanup kills the
// processes it may be waiting on.
package stepdef

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/cucumber/godog"
)

// Grace is how long after its deadline a step may take to return on its own before it is
// abandoned.
const Grace = 2 * time.Second

// ErrStepTimeout marks a step abandoned at its deadline.
var ErrStepTimeout = errors.New("step exceeded its deadline")

// DeadlineError is a step's failure when its deadline fired: what the step returned (a wait
// that gave up on the cancelled context, say) under one prefix naming the deadline and what
// sets it, so the record says once why the step ended ("step deadline --step-timeout 2s
// fired: gave up waiting for …"), not only the inner wait's own limit.
type DeadlineError struct {
	Timeout time.Duration
	// Name is what sets the deadline ("--step-timeout"); "" names none.
	Name string
	// Err is what the step returned, or ErrStepTimeout when it did not return in time.
	Err error
}

func (e *DeadlineError) Error() string {
	name := ""
	if e.Name != "" {
		name = e.Name + " "
	}
	return fmt.Sprintf("step deadline %s%s fired: %v", name, e.Timeout, e.Err)
}

func (e *DeadlineError) Unwrap() error { return e.Err }

// deadlineFired is err under a DeadlineError when the step's own deadline (ctx) ended it and
// not the scenario (base): an error already naming the deadline is left as it is.
func deadlineFired(err error, ctx, base context.Context, timeout time.Duration, name string) error {
	var already *DeadlineError
	if err == nil || base.Err() != nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &already) {
		return err
	}
	return &DeadlineError{Timeout: timeout, Name: name, Err: err}
}

// Registry registers steps on one scenario context with a per-step timeout, and hooks
// whose panics are recovered.
type Registry struct {
	SC      *godog.ScenarioContext
	Timeout time.Duration
	// TimeoutName is what sets Timeout ("--step-timeout"), named when a step's deadline fires.
	TimeoutName string
	// OnHookError, if set, hears about every After hook that failed or panicked.
	OnHookError func(error)
	// Index, if set, records every step definition (expression, handler, file:line). With
	// Index set and SC nil the registry only records: tooling builds the step library that
	// way without a godog suite.
	Index *Index
}

// recordingOnly is true for a registry that lists steps without registering them on godog.
func (r Registry) recordingOnly() bool { return r.SC == nil && r.Index != nil }

// After registers an After hook. godog does not recover panics in After hooks (the runner
// would die and orphan children), so the panic is turned into an error here.
func (r Registry) After(h func(ctx context.Context, sc *godog.Scenario, err error) (context.Context, error)) {
	if r.recordingOnly() {
		return
	}
	r.SC.After(func(ctx context.Context, sc *godog.Scenario, scErr error) (out context.Context, err error) {
		out = ctx
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic in After hook: %v", p)
			}
			if err != nil && r.OnHookError != nil {
				r.OnHookError(err)
			}
		}()
		out, err = h(ctx, sc, scErr)
		if out == nil {
			out = ctx
		}
		return out, err
	})
}

// Before registers a Before hook (godog recovers panics in these itself).
func (r Registry) Before(h func(ctx context.Context, sc *godog.Scenario) (context.Context, error)) {
	if r.recordingOnly() {
		return
	}
	r.SC.Before(h)
}

// Step registers fn for expr (a regular expression, as godog's Step) with the deadline.
func (r Registry) Step(expr any, fn any) {
	// Compiled once per expression for the whole run, not by godog for every scenario's suite
	// (the step library's 234 expressions took 80–120 ms a scenario).
	switch e := expr.(type) {
	case string:
		expr = compiled(e)
	case []byte:
		expr = compiled(string(e))
	}
	if r.Index != nil {
		r.Index.Add(expr, fn)
	}
	if r.recordingOnly() {
		return
	}
	r.SC.Step(expr, Wrap(fn, r.Timeout, r.TimeoutName))
}

var (
	ctxType = reflect.TypeOf((*context.Context)(nil)).Elem()
	errType = reflect.TypeOf((*error)(nil)).Elem()
)

// Wrap returns a function of the same type as fn that runs fn with a deadline. fn must be a
// godog step handler; if its first parameter is a context.Context that context carries the
// deadline. When the deadline passes, the wrapper returns ErrStepTimeout through fn's error
// result, or panics with it when fn returns no error (godog turns a step panic into a
// failure); name is what sets the deadline, which the failure names (DeadlineError: "step
// deadline <name> <timeout> fired: …"), "" for none.
func Wrap(fn any, timeout time.Duration, name string) any {
	v := reflect.ValueOf(fn)
	t := v.Type()
	if t.Kind() != reflect.Func {
		panic(fmt.Sprintf("stepdef: handler is %s, not a func", t))
	}
	takesCtx := t.NumIn() > 0 && t.In(0) == ctxType
	errIndex := -1
	for i := 0; i < t.NumOut(); i++ {
		if t.Out(i) == errType {
			errIndex = i
		}
	}
	return reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		base := context.Background()
		if takesCtx {
			base = args[0].Interface().(context.Context)
		}
		ctx, cancel := context.WithTimeout(base, timeout)
		defer cancel()
		if takesCtx {
			args = append([]reflect.Value{reflect.ValueOf(ctx)}, args[1:]...)
		}
		done := make(chan []reflect.Value, 1)
		panicked := make(chan any, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					panicked <- p
				}
			}()
			done <- v.Call(args)
		}()
		hardStop := time.NewTimer(timeout + Grace)
		defer hardStop.Stop()
		var stopErr error
		select {
		case out := <-done:
			if errIndex >= 0 && !out[errIndex].IsNil() {
				err := deadlineFired(out[errIndex].Interface().(error), ctx, base, timeout, name)
				out[errIndex] = reflect.ValueOf(&err).Elem()
			}
			return restoreContext(out, t, base, takesCtx)
		case p := <-panicked:
			panic(p) // re-raise on godog's goroutine, where it is recovered into a failure
		case <-hardStop.C:
			stopErr = &DeadlineError{Timeout: timeout, Name: name,
				Err: fmt.Errorf("%w: the step did not return within %s after it and was abandoned", ErrStepTimeout, Grace)}
		case <-base.Done():
			// The scenario itself was cancelled (interrupt): give the step its grace to return.
			select {
			case out := <-done:
				return restoreContext(out, t, base, takesCtx)
			case p := <-panicked:
				panic(p)
			case <-time.After(Grace):
				stopErr = fmt.Errorf("step abandoned after interrupt: %w", base.Err())
			}
		}
		if errIndex < 0 {
			panic(stopErr)
		}
		out := make([]reflect.Value, t.NumOut())
		for i := range out {
			switch {
			case i == errIndex:
				out[i] = reflect.ValueOf(&stopErr).Elem()
			case t.Out(i) == ctxType:
				out[i] = reflect.ValueOf(&base).Elem()
			default:
				out[i] = reflect.Zero(t.Out(i))
			}
		}
		return out
	}).Interface()
}

// restoreContext makes sure a step that returns a context does not hand godog the
// deadline-bound one we made (it is cancelled as soon as the step returns, and the next step
// would inherit a dead context). The returned context is replaced by one that answers
// Value from it and takes its deadline and cancellation from the scenario's context.
func restoreContext(out []reflect.Value, t reflect.Type, base context.Context, takesCtx bool) []reflect.Value {
	for i := 0; i < t.NumOut(); i++ {
		if t.Out(i) != ctxType || out[i].IsNil() {
			continue
		}
		returned := out[i].Interface().(context.Context)
		out[i] = reflect.ValueOf(&detached{Context: base, values: returned}).Convert(ctxType)
	}
	return out
}

// detached carries the values of the step's returned context with the lifetime of the
// scenario's context.
type detached struct {
	context.Context
	values context.Context
}

func (d *detached) Value(key any) any { return d.values.Value(key) }
