// Package explorer is the application logic of `flowtest explore`: it runs one race
// scenario once per schedule (through a Runner the command provides, which knows how to run
// a scenario on the target), plans the schedules with a strategy of internal/harness/schedule, checks
// the scenario's own assertions and the contract's invariants after each, counts distinct
// write orders and outcome branches, shrinks a violating schedule, and writes the report
// (explore.json, schedules/<n>.json, a README section).
package explorer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/schedule"
)

// Outcome is one run of the scenario under one schedule.
type Outcome struct {
	// Passed: the scenario's own steps and assertions passed, as `run` judges it.
	Passed bool
	// Reason is the scenario's failure (first line), when it did not pass.
	Reason string
	// Assertion is the `what` of the scenario's first failing assertion ("" when none
	// failed): what a shrunk or replayed schedule must fail on again.
	Assertion string
	// Branch is which alternative of an assertion with alternatives held ("" when none).
	Branch string
	// Archive is the run's archive, relative to the exploration's directory.
	Archive string
	// Result is what the scheduler released; History adds the scope's final records.
	Result  schedule.Result
	History schedule.History
}

// Runner runs the scenario once with chooser c deciding its write order; n numbers the
// run (1-based, also in its work dir and log). An error is the runner's own failure (the
// emulator did not start), not the scenario's.
type Runner interface {
	Run(ctx context.Context, n int, c schedule.Chooser) (Outcome, error)
}

// Options configures an exploration.
type Options struct {
	Scenario string
	Strategy schedule.Strategy
	// Schedules bounds the number of schedules run; Time bounds the elapsed time (0: none).
	Schedules int
	Time      time.Duration
	// Workers run schedules at once (the sandbox: an emulator each; live: 1).
	Workers int
	// ShrinkRuns bounds the runs spent shrinking each violating schedule (0: no shrinking).
	ShrinkRuns int
	// Progress gets one line per schedule.
	Progress io.Writer
	// ReplayCommand renders the command that replays a schedule file (for the report).
	ReplayCommand func(file string) string
}

// ScheduleRun is one schedule as the report keeps it.
type ScheduleRun struct {
	N          int                  `json:"n"`
	Order      []schedule.Signature `json:"order"`
	Duplicate  bool                 `json:"duplicate"` // its write order had been seen
	Passed     bool                 `json:"passed"`
	Reason     string               `json:"reason,omitempty"`
	Assertion  string               `json:"assertion,omitempty"`
	Branch     string               `json:"branch,omitempty"`
	Violations []schedule.Violation `json:"violations,omitempty"`
	Forced     int                  `json:"forced"`
	Seconds    float64              `json:"seconds"`
	Archive    string               `json:"archive,omitempty"` // the run's archive, relative
}

// failed: the schedule broke the scenario or an invariant.
func (s ScheduleRun) failed() bool { return !s.Passed || len(s.Violations) > 0 }

// Failure is what a shrunk or replayed schedule must keep showing: the scenario's first
// failing assertion and the invariants it broke, either alone where the other held (a
// schedule that failed both is another way of failing than one that broke the invariants
// only: each is shrunk and kept), else that the scenario failed.
func (s ScheduleRun) Failure() string { return s.failure() }

func (s ScheduleRun) failure() string {
	var ways []string
	if !s.Passed && s.Assertion != "" {
		ways = append(ways, "assertion "+s.Assertion)
	}
	if len(s.Violations) > 0 {
		names := map[string]bool{}
		for _, v := range s.Violations {
			names[v.Invariant] = true
		}
		var out []string
		for n := range names {
			out = append(out, n)
		}
		sort.Strings(out)
		ways = append(ways, "invariant "+strings.Join(out, ","))
	}
	if len(ways) == 0 {
		return "scenario failed"
	}
	return strings.Join(ways, "; ")
}

// Violating is a schedule that failed, with its shrunk replay.
type Violating struct {
	Schedule ScheduleRun `json:"schedule"`
	// Replay is the order the replay file forces (shrunk when shrinking was possible);
	// ShrunkFrom is its length before shrinking.
	Replay     []schedule.Signature `json:"replay"`
	ShrunkFrom int                  `json:"shrunk_from"`
	// Shrunk: this schedule was shrunk (the first of its way of failing); the others keep
	// their whole order.
	Shrunk bool `json:"shrunk"`
	// Released is every write the replay of Replay released (its forced prefix, then the
	// scheduler's default order): what the generated scenario forces.
	Released []schedule.Signature `json:"released"`
	// Gherkin is schedules/<n>.feature, the scenario whose barriers force Released; when
	// none could be generated, GherkinWhy says why.
	Gherkin    string `json:"gherkin,omitempty"`
	GherkinWhy string `json:"gherkin_why,omitempty"`
	// Joins says how the generated scenario joins the suite (AddToSuite).
	Joins   *Joining `json:"joins,omitempty"`
	File    string   `json:"file,omitempty"` // schedules/<n>.json
	Command string   `json:"command,omitempty"`
}

// Redirect says that the exploration asked for scenario From ran its explorable sibling To
// instead (the manifest's explore: {via: To, reason: …} on From), and why.
type Redirect struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// Report is explore.json.
type Report struct {
	Scenario string `json:"scenario"`
	// Via is set when the command named another scenario whose entry redirects here.
	Via *Redirect `json:"via,omitempty"`
	// Product says which kSQL-FlowNet the schedules drove (the real product or the reference).
	Product       string         `json:"product,omitempty"`
	Strategy      string         `json:"strategy"`
	Seed          uint64         `json:"seed"`
	SchedulesRun  int            `json:"schedules_run"`
	DistinctOrder int            `json:"distinct_write_orders"`
	Duplicates    int            `json:"duplicate_orders"`
	Exhausted     bool           `json:"exhausted"` // the strategy had nothing left to plan
	Branches      map[string]int `json:"branches"`
	Passed        int            `json:"passed"`
	Violations    []Violating    `json:"violations"`
	Schedules     []ScheduleRun  `json:"schedules"`
	Elapsed       float64        `json:"elapsed_seconds"`
	PerMinute     float64        `json:"schedules_per_minute"`
	Start         time.Time      `json:"start"`
}

// judge turns a run's outcome into its schedule record.
func judge(n int, o Outcome, took time.Duration) ScheduleRun {
	h := o.History
	h.Writes = o.Result.Writes
	return ScheduleRun{N: n, Order: o.Result.Schedule(), Passed: o.Passed, Reason: o.Reason, Assertion: o.Assertion, Branch: o.Branch,
		Violations: schedule.CheckAll(h), Forced: o.Result.Forced, Seconds: took.Seconds(), Archive: o.Archive}
}

// Explore runs the exploration.
func Explore(ctx context.Context, r Runner, o Options) (*Report, error) {
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.Schedules <= 0 && o.Time <= 0 {
		return nil, errors.New("explore: give a number of schedules or a time budget")
	}
	start := time.Now()
	rep := &Report{Scenario: o.Scenario, Strategy: o.Strategy.Name(), Branches: map[string]int{}, Start: start.UTC()}
	pl := &pool{ctx: ctx, o: o, rep: rep, seen: map[string]bool{}}
	pl.cond = sync.NewCond(&pl.mu)
	if o.Time > 0 {
		pl.deadline = start.Add(o.Time)
	}
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pl.work(r)
		}()
	}
	wg.Wait()
	sort.Slice(rep.Schedules, func(i, j int) bool { return rep.Schedules[i].N < rep.Schedules[j].N })
	tally(rep)
	if pl.runErr == nil {
		rep.Violations = violations(ctx, r, rep.Schedules, o)
	}
	rep.Elapsed = time.Since(start).Seconds()
	if rep.Elapsed > 0 {
		rep.PerMinute = float64(rep.SchedulesRun) / rep.Elapsed * 60
	}
	return rep, pl.runErr
}

// pool hands the strategy's schedules to the workers and gathers what they ran into the
// report, one schedule at a time under mu.
type pool struct {
	ctx      context.Context
	o        Options
	rep      *Report
	deadline time.Time // zero: no time budget

	mu               sync.Mutex
	cond             *sync.Cond // a schedule ended: the strategy may have more
	planned, running int
	seen             map[string]bool // write orders seen
	runErr           error           // the first schedule that could not be run
}

// next is the next schedule to run, its number and its chooser; false when the budget is
// spent, the run was stopped or failed, or the strategy has no more.
func (pl *pool) next() (int, schedule.Chooser, bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	o := pl.o
	for {
		if pl.runErr != nil || pl.ctx.Err() != nil || (o.Schedules > 0 && pl.planned >= o.Schedules) ||
			(!pl.deadline.IsZero() && time.Now().After(pl.deadline)) {
			return 0, nil, false
		}
		c, wait := o.Strategy.Plan(pl.planned)
		if c != nil {
			pl.planned++
			pl.running++
			return pl.planned, c, true
		}
		if !wait || pl.running == 0 {
			pl.rep.Exhausted = true
			return 0, nil, false
		}
		pl.cond.Wait() // a running schedule will report and may give the strategy more
	}
}

// work runs schedules until next says stop or one cannot be run.
func (pl *pool) work(r Runner) {
	for {
		n, c, ok := pl.next()
		if !ok {
			return
		}
		t0 := time.Now()
		out, err := r.Run(pl.ctx, n, c)
		pl.mu.Lock()
		pl.running--
		if err != nil {
			if pl.runErr == nil {
				pl.runErr = fmt.Errorf("schedule %d: %w", n, err)
			}
			pl.cond.Broadcast()
			pl.mu.Unlock()
			return
		}
		pl.o.Strategy.Executed(n-1, out.Result)
		s := judge(n, out, time.Since(t0))
		key := schedule.Order(s.Order)
		s.Duplicate = pl.seen[key]
		pl.seen[key] = true
		pl.rep.Schedules = append(pl.rep.Schedules, s)
		progress(pl.o.Progress, s) // under the lock: one line at a time
		pl.cond.Broadcast()
		pl.mu.Unlock()
	}
}

// tally counts the report's schedules: run, duplicates, distinct orders, branches, passed.
func tally(rep *Report) {
	rep.SchedulesRun = len(rep.Schedules)
	for _, s := range rep.Schedules {
		if s.Duplicate {
			rep.Duplicates++
		} else {
			rep.DistinctOrder++
		}
		if s.Branch != "" {
			rep.Branches[s.Branch]++
		}
		if !s.failed() {
			rep.Passed++
		}
	}
}

// violations are the failed schedules, each shrunk when it is the first to fail that way:
// the others are listed with their own order (a shrink costs up to ShrinkRuns runs of the
// scenario).
func violations(ctx context.Context, r Runner, schedules []ScheduleRun, o Options) []Violating {
	var out []Violating
	shrunk := map[string]bool{}
	for _, s := range schedules {
		if s.failed() && ctx.Err() == nil {
			v := Violating{Schedule: s, Replay: s.Order, ShrunkFrom: len(s.Order), Released: s.Order}
			if o.ShrinkRuns > 0 && !shrunk[s.failure()] {
				shrunk[s.failure()] = true
				v.Replay, v.Released = Shrink(ctx, r, s, o.ShrinkRuns, o.Progress)
				v.Shrunk = true
			}
			out = append(out, v)
		}
	}
	return out
}

func progress(w io.Writer, s ScheduleRun) {
	if w == nil {
		return
	}
	verdict := "passed"
	switch {
	case len(s.Violations) > 0:
		verdict = "VIOLATION " + s.failure()
	case !s.Passed:
		verdict = "FAILED: " + s.Reason
	}
	dup := ""
	if s.Duplicate {
		dup = " (order seen before)"
	}
	branch := ""
	if s.Branch != "" {
		branch = ", branch " + s.Branch
	}
	fmt.Fprintf(w, "schedule %d: %d writes released%s, %s%s, %.1fs\n", s.N, len(s.Order), dup, verdict, branch, s.Seconds)
}

// Shrink makes a violating schedule shorter while it keeps failing the same way, within
// runs replays. A replay forces its releases in order and then lets the scheduler's default
// order (the process released last goes on) finish, so the releases that matter are most
// often a short prefix: it first looks for the shortest failing prefix (doubling, then
// halving the gap), then tries dropping each remaining release and moving each one place
// earlier. It returns the shortest failing replay order it found and every write its run
// released.
func Shrink(ctx context.Context, r Runner, s ScheduleRun, runs int, w io.Writer) (replay, released []schedule.Signature) {
	want := s.failure()
	best := s.Order
	released = s.Order
	var last []schedule.Signature // what the last replay released
	try := func(cand []schedule.Signature) bool {
		if runs <= 0 || ctx.Err() != nil {
			return false
		}
		runs--
		out, err := r.Run(ctx, 0, schedule.Replay(cand))
		if err != nil {
			return false
		}
		got := judge(0, out, 0)
		ok := got.failed() && got.failure() == want
		last = got.Order
		if w != nil {
			fmt.Fprintf(w, "shrink: %d releases forced: %s\n", len(cand), map[bool]string{true: "still fails", false: "passes or fails otherwise"}[ok])
		}
		return ok
	}
	// Shortest failing prefix: probe 1, 2, 4, … releases, then bisect between the longest
	// probe that passed and the shortest that failed.
	lo, hi := 0, len(best) // a prefix of lo releases passed (or is untried), hi fails
	for n := 1; n < hi && runs > 0; n *= 2 {
		if try(best[:n]) {
			hi, released = n, last
			break
		}
		lo = n
	}
	for hi-lo > 1 && runs > 0 {
		mid := (lo + hi) / 2
		if try(best[:mid]) {
			hi, released = mid, last
		} else {
			lo = mid
		}
	}
	best = best[:hi]
	for changed := true; changed && runs > 0; {
		changed = false
		// A replay forces at least one release (an empty one is the default order, which
		// no replay file names).
		for i := len(best) - 1; i >= 0 && runs > 0 && len(best) > 1; i-- {
			cand := append(append([]schedule.Signature{}, best[:i]...), best[i+1:]...)
			if try(cand) {
				best, released, changed = cand, last, true
			}
		}
		for i := 1; i < len(best) && runs > 0; i++ {
			if best[i].String() == best[i-1].String() {
				continue
			}
			cand := append([]schedule.Signature{}, best...)
			cand[i-1], cand[i] = cand[i], cand[i-1]
			// Only towards a smaller order, so moving ends.
			if schedule.Order(cand) < schedule.Order(best) && try(cand) {
				best, released, changed = cand, last, true
			}
		}
	}
	return best, released
}
