// Package scenario holds the state of the one scenario that is running: its id, work dir,
// evidence (assertions, barrier arrivals, traffic counts), the processes it started and its
// cleanup stack. The runner creates it in the Before hook and puts it in the context; steps
// read it with From(ctx). There is no package-level mutable state: everything a scenario
// owns hangs off its State, so nothing leaks into the next scenario.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/results"
)

type ctxKey struct{}

// With returns ctx carrying s, its process registry (so proc.Start registers every child
// the scenario starts) and its API counter (so a run-wide kintone client counts what it
// sends for the scenario on the scenario's counter).
func With(ctx context.Context, s *State) context.Context {
	ctx = apicount.NewContext(ctx, s.API)
	return proc.WithRegistry(context.WithValue(ctx, ctxKey{}, s), s.Procs)
}

// From returns the scenario state in ctx. It panics when there is none: a step running
// outside a scenario is a wiring bug, and godog turns the panic into a step failure.
func From(ctx context.Context) *State {
	s, ok := ctx.Value(ctxKey{}).(*State)
	if !ok {
		panic("scenario: no scenario state in context (step called outside the runner?)")
	}
	return s
}

// State is one scenario's state.
type State struct {
	ID      string
	Tags    []string
	WorkDir string
	// Log receives progress lines (long waits, process starts) for the person watching.
	Log io.Writer
	// Procs holds every child process the scenario started.
	Procs *proc.Registry
	// API counts the scenario's kintone requests (the runner makes it a Child of the run's
	// counter); nil counts nothing.
	API *apicount.Counter

	mu          sync.Mutex
	domains     map[any]any // each step domain's typed state, by its *Key
	notes       []results.Note
	assertions  []results.Assertion
	barriers    []results.BarrierArrival
	faults      []results.FaultFiring
	waits       []results.Wait
	attempts    []results.Attempt
	diffRecords []results.RawRecord // nil: not read
	diffApps    map[string]string
	diffScopes  []string
	traffic     map[string]int
	trafficLog  []results.TrafficLine
	cleanups    []cleanup
	summarize   bool // processes are recorded with output summaries only (SummarizeOutputs)
}

type cleanup struct {
	name string
	fn   func(ctx context.Context) error
}

// New makes the state for scenario id with its own work dir under root.
func New(id string, tags []string, root string, log io.Writer) (*State, error) {
	if log == nil {
		log = io.Discard
	}
	dir, err := os.MkdirTemp(root, id+"-")
	if err != nil {
		return nil, fmt.Errorf("scenario %s: create work dir: %w", id, err)
	}
	return &State{ID: id, Tags: tags, WorkDir: dir, Log: log, domains: map[any]any{}, Procs: proc.NewRegistry(), traffic: map[string]int{}}, nil
}

// Key names one step domain's state. Each domain declares one package-level key for its own
// state type, so no domain reads or writes another's fields through a shared map or struct.
type Key[T any] struct{ name string }

// NewKey declares the key of a domain's state; name is used in messages only.
func NewKey[T any](name string) *Key[T] { return &Key[T]{name: name} }

// Of returns the domain's state in s, creating its zero value on first use.
func (k *Key[T]) Of(s *State) *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.domains[k]; ok {
		return v.(*T)
	}
	v := new(T)
	s.domains[k] = v
	return v
}

// Note records evidence that is not an assertion (a trial's classification and timings, an
// inspection's output) for the scenario record.
func (s *State) Note(what, detail string) {
	s.mu.Lock()
	s.notes = append(s.notes, results.Note{What: what, Detail: detail})
	s.mu.Unlock()
	fmt.Fprintf(s.Log, "  note: %s: %s\n", what, detail)
}

// Reads is an assertion about to be made, with the subjects it reads (docs/coverage.md):
// `sc.St.On("state.NODE_STATE.status").Equal(...)`. Assertions are made only through it,
// so none can be recorded without a subject; `flowtest coverage` maps what the scenarios
// assert from them.
type Reads struct {
	s        *State
	subjects []string
}

// On names the subjects the next assertion reads: at least one.
func (s *State) On(subject string, more ...string) Reads {
	return Reads{s: s, subjects: append([]string{subject}, more...)}
}

// Assert records one assertion (expected and seen) and returns an error when it failed, so a
// step can `return sc.St.On(subject).Assert(...)`.
func (r Reads) Assert(what string, expected, seen any, ok bool) error {
	a := results.Assertion{What: what, Expected: fmt.Sprint(expected), Seen: fmt.Sprint(seen), OK: ok,
		Subjects: slices.Clone(r.subjects)}
	r.s.mu.Lock()
	r.s.assertions = append(r.s.assertions, a)
	r.s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s: expected %s, saw %s", what, a.Expected, a.Seen)
	}
	return nil
}

// Equal records an equality assertion. Values are equal when they have the same type and
// value (reflect.DeepEqual), not when they print alike: 3 is not "3", and []string{"a b"} is
// not []string{"a", "b"}. Values that differ but print alike are recorded as Go syntax
// (%#v), so the record shows what differed.
func (r Reads) Equal(what string, expected, seen any) error {
	same := reflect.DeepEqual(expected, seen)
	if !same && fmt.Sprint(expected) == fmt.Sprint(seen) {
		return r.Assert(what, fmt.Sprintf("%#v", expected), fmt.Sprintf("%#v", seen), false)
	}
	return r.Assert(what, expected, seen, same)
}

// SummarizeOutputs makes the record hold output summaries of the scenario's processes
// instead of their output tails (SummarizeOutput): for series whose records must not hold
// stdout/stderr bodies (P2-16, scenarios.md §2.7).
func (s *State) SummarizeOutputs() {
	s.mu.Lock()
	s.summarize = true
	s.mu.Unlock()
}

// AddBarrierArrival records a barrier arrival for the scenario record.
func (s *State) AddBarrierArrival(a results.BarrierArrival) {
	s.mu.Lock()
	s.barriers = append(s.barriers, a)
	s.mu.Unlock()
}

// AddFaultFirings records requests selective faults took, for the scenario record.
func (s *State) AddFaultFirings(f ...results.FaultFiring) {
	s.mu.Lock()
	s.faults = append(s.faults, f...)
	s.mu.Unlock()
}

// AddWait records one finished wait for the scenario record. The runner hands it to
// wait.Config.OnDone, so every wait of the scenario's steps lands here.
func (s *State) AddWait(r wait.Record) {
	// The wait has just ended: it began Elapsed ago.
	w := results.Wait{Name: r.Name, What: r.What, LimitMS: r.Limit.Milliseconds(), ElapsedMS: r.Elapsed.Milliseconds(),
		Outcome: string(r.Outcome), Checks: r.Checks, LastObservation: r.LastObservation, LastError: r.LastErr,
		Start: time.Now().Add(-r.Elapsed).UTC()}
	s.mu.Lock()
	s.waits = append(s.waits, w)
	s.mu.Unlock()
}

// ReleaseBarrier records when the held request of barrier id (its latest arrival not yet
// released) was let go, so the record shows the hold from arrival to release.
func (s *State) ReleaseBarrier(id string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.barriers) - 1; i >= 0; i-- {
		if s.barriers[i].ID == id && s.barriers[i].ReleasedAt.IsZero() {
			s.barriers[i].ReleasedAt = at.UTC()
			return
		}
	}
}

// SetAttempts records the NODE_ATTEMPT records the scenario's runs left (read before the
// cleanup deletes them), replacing any recorded earlier.
func (s *State) SetAttempts(atts []results.Attempt) {
	s.mu.Lock()
	s.attempts = append([]results.Attempt(nil), atts...)
	s.mu.Unlock()
}

// SetHistory keeps the scenario's state and audit records (read before the cleanup) and
// the target's app ids by role; Evidence normalises them with the processes' outputs into
// the record's differential history.
func (s *State) SetHistory(recs []results.RawRecord, appIDs map[string]string, scopes []string) {
	s.mu.Lock()
	s.diffScopes = scopes
	s.diffRecords = append([]results.RawRecord{}, recs...)
	s.diffApps = appIDs
	s.mu.Unlock()
}

// AddTrafficLog appends logged fault-proxy requests for the scenario record.
func (s *State) AddTrafficLog(lines []results.TrafficLine) {
	s.mu.Lock()
	s.trafficLog = append(s.trafficLog, lines...)
	s.mu.Unlock()
}

// AddTraffic adds counted requests (by kind) for the scenario record.
func (s *State) AddTraffic(counts map[string]int) {
	s.mu.Lock()
	for k, v := range counts {
		s.traffic[k] += v
	}
	s.mu.Unlock()
}

// Defer pushes a cleanup action; actions run last-in first-out after the scenario, after
// every surviving process has been killed.
func (s *State) Defer(name string, fn func(ctx context.Context) error) {
	s.mu.Lock()
	s.cleanups = append(s.cleanups, cleanup{name, fn})
	s.mu.Unlock()
}

// KillProcesses kills every process tree of the scenario that is still alive. It never
// panics: it runs on the interrupt path, where a panic would orphan the children.
func (s *State) KillProcesses() (killed []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kill leftover processes panicked: %v", r)
		}
	}()
	ks, err := s.Procs.KillAll()
	for _, k := range ks {
		line := fmt.Sprintf("%s (pid %d, %d processes in its tree)", k.Name, k.Pid, len(k.Pids))
		if k.Err != nil {
			line += ": " + k.Err.Error()
		}
		killed = append(killed, line)
	}
	return killed, err
}

// Cleanup kills surviving processes, runs the cleanup stack in LIFO order (every action runs
// even when an earlier one failed; a panic is recovered and counted as a failure) and removes
// the work dir unless keepWorkDir. Each action gets its own deadline.
func (s *State) Cleanup(perAction time.Duration, keepWorkDir bool) results.Cleanup {
	out := results.Cleanup{OK: true}
	var errs []error
	killed, err := s.KillProcesses()
	for _, k := range killed {
		out.Actions = append(out.Actions, "killed leftover process "+k)
	}
	if err != nil {
		errs = append(errs, err)
	}
	s.mu.Lock()
	stack := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(stack) - 1; i >= 0; i-- {
		c := stack[i]
		// The cleanup's kintone requests (the record sweep) are the scenario's too.
		err := runCleanup(apicount.NewContext(context.Background(), s.API), c, perAction)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
			out.Actions = append(out.Actions, c.name+": FAILED")
		} else {
			out.Actions = append(out.Actions, c.name+": ok")
		}
	}
	if !keepWorkDir && s.WorkDir != "" {
		if err := os.RemoveAll(s.WorkDir); err != nil {
			errs = append(errs, fmt.Errorf("remove work dir: %w", err))
		} else {
			out.Actions = append(out.Actions, "removed work dir")
		}
	}
	if len(errs) > 0 {
		out.OK = false
		out.Error = errors.Join(errs...).Error()
	}
	return out
}

func runCleanup(parent context.Context, c cleanup, limit time.Duration) (err error) {
	ctx, cancel := context.WithTimeout(parent, limit)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return c.fn(ctx)
}

// Evidence copies what the scenario recorded into rec.
func (s *State) Evidence(rec *results.Scenario) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec.Assertions = append(rec.Assertions, s.assertions...)
	rec.Notes = append(rec.Notes, s.notes...)
	rec.Barriers = append(rec.Barriers, s.barriers...)
	rec.Faults = append(rec.Faults, s.faults...)
	rec.Waits = append(rec.Waits, s.waits...)
	rec.Attempts = append(rec.Attempts, s.attempts...)
	rec.TrafficLog = append(rec.TrafficLog, s.trafficLog...)
	for _, p := range s.Procs.Processes() {
		rp := p.Record()
		if s.summarize {
			out, errOut := rp.StdoutTail != "", rp.StderrTail != ""
			rp.OutputSummarized, rp.StdoutPresent, rp.StderrPresent = true, &out, &errOut
			rp.StdoutTail, rp.StderrTail = SummarizeOutput(rp.StdoutTail), SummarizeOutput(rp.StderrTail)
		}
		rec.Processes = append(rec.Processes, rp)
	}
	if s.diffRecords != nil {
		rec.Differential = results.NormaliseHistory(s.diffRecords, rec.Processes, s.diffApps, s.diffScopes)
	}
	if len(s.traffic) > 0 {
		if rec.Traffic == nil {
			rec.Traffic = map[string]int{}
		}
		for k, v := range s.traffic {
			rec.Traffic[k] += v
		}
	}
}
