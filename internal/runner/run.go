package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/internal/base/interrupt"
	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/stepindex"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// Exit codes of a run.
const (
	ExitPassed  = 0 // every selected scenario that ran passed (and at least one ran)
	ExitFailed  = 1
	ExitRefused = 2 // usage, a malformed input file, preflight: nothing was started
	// ExitNothingRan: every selected scenario was not run (not implemented, or it needs
	// another platform). Nothing failed, but nothing passed either, and not run is never
	// green. A run where some selected scenarios ran and passed and the others were not run
	// is ExitPassed.
	ExitNothingRan  = 3
	ExitInterrupted = 130
)

// Options configure one run over a planned list of items.
type Options struct {
	Features fs.FS // the feature files (paths in Items are relative to it)
	Items    []Item

	// Initialize registers the step definitions and hooks of one scenario. Steps and hooks
	// must be registered through reg, which gives every step a deadline and recovers panics
	// in After hooks.
	Initialize func(sc *godog.ScenarioContext, reg stepdef.Registry)
	// BeforeScenario, if set, runs after the scenario state exists and before the first
	// step (e.g. to hand the state the target). An error fails the scenario.
	BeforeScenario func(ctx context.Context, st *scenario.State) error
	// BeforeCleanup, if set, runs after the scenario's steps and before its cleanup, with a
	// context of its own (bounded by CleanupTimeout), to read evidence the cleanup will
	// delete (the node attempts of its runs, for the timeline). It must not fail the
	// scenario: what it cannot read it notes.
	BeforeCleanup func(ctx context.Context, st *scenario.State)
	// Verify, if set, runs after the scenario's steps and before BeforeCleanup and the
	// cleanup (the scope's records still exist), unless the run was interrupted, with a
	// context of its own (bounded by CleanupTimeout) and the scenario's manifest entry:
	// checks of the whole scenario (the contract's invariants). What it asserts lands in the
	// record; an error fails a scenario that had passed, a panic too.
	Verify func(ctx context.Context, st *scenario.State, e Entry) error

	StepTimeout    time.Duration // per step; default 5 minutes
	TimeoutScale   float64       // multiplies every named wait limit (FLOWTEST_TIMEOUT_SCALE); <= 0 means 1
	CleanupTimeout time.Duration // per cleanup action; default 2 minutes
	WorkRoot       string        // scenario work dirs are made here
	KeepWorkDirs   bool
	Formats        []string // extra godog formatters, each name:path (ValidateFormat): "junit:out.xml", "pretty:p.txt"

	Archive *results.Archive // scenario records are written here as each scenario ends
	Run     *results.Run     // run.json skeleton (target, profile, SUT …); totals filled in

	Progress io.Writer // start/end lines and interrupt notices
	// Status, if set, adds the progress line (done/total, passed, failed, elapsed, ETA) to
	// Progress: progress.go.
	Status *StatusOptions
	// Concurrency is how many scenarios run at once (<= 1: one at a time). Records are
	// written as each scenario ends; the archive lists them in Items order whatever the
	// finishing order. Isolation beyond the scope (an emulator per scenario) is the caller's,
	// through BeforeScenario.
	Concurrency int
	// Expected are scenario durations of an earlier run. With Concurrency > 1 the scenarios
	// start longest-expected first (EstimatedDuration: these, else the lease-wait weight),
	// ties in run order, so that the few long lease waits do not start last and set the
	// run's end; one at a time they start in run order. Status.Expected is used when nil.
	Expected map[string]time.Duration
	// Stop, when cancelled (the first interrupt, internal/base/interrupt), cancels the running
	// scenarios and starts no other; StopNow (the second) then kills their children and
	// calls Exit(130). Nil: the run is not interruptible.
	Stop, StopNow context.Context
	Exit          func(code int)

	// API counts the run's kintone requests; each scenario counts on a Child of it, recorded
	// in its record, and run.json holds the run's (with what the caller counted on it
	// outside the scenarios, e.g. the live preflight). Nil: each scenario counts alone and
	// run.json holds no counts.
	API *apicount.Counter
	// AppRoles names the target's apps (app id → role) in the counts of the records.
	AppRoles map[string]string
	// KnownDefects is the catalogue of known product defects (LoadKnownDefects). The entries
	// that apply to Run.Product (the real product, its package and version) judge their
	// scenarios' records (results.JudgeKnownDefect): a failure by the declared assertion is
	// still failed but does not make the exit code 1; a pass under an entry does.
	KnownDefects []results.KnownDefect

	applying []results.KnownDefect // KnownDefects that apply to Run.Product
}

// Result is what a run did.
type Result struct {
	Code        int
	Scenarios   []*results.Scenario
	Interrupted bool
	// FormatFiles are the --format files written (redacted, outside the archive), sorted, for
	// the caller's leak check of everything the run wrote.
	FormatFiles []string
}

type runState struct {
	mu          sync.Mutex
	running     map[*scenario.State]context.CancelFunc // the scenarios running now
	interrupted bool
	formatFiles []string // --format files written (Result.FormatFiles)
	formatErrs  []error
}

func (rs *runState) formatsWritten(files []string, err error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.formatFiles = append(rs.formatFiles, files...)
	if err != nil {
		rs.formatErrs = append(rs.formatErrs, err)
	}
}

// redactor is the archive's redactor, which the --format files go through as well; without
// an archive (tests only) it is nil and nothing is redacted.
func (o Options) redactor() *redact.Redactor {
	if o.Archive == nil {
		return nil
	}
	return o.Archive.Redactor()
}

// Execute runs the items that are marked to run, in order, up to o.Concurrency at once, and
// writes every item's record to the archive (not-run items too, with their reason).
func Execute(ctx context.Context, o Options) Result {
	o = o.withDefaults()
	var st *status
	if o.Status != nil {
		st = newStatus(o.Progress, *o.Status, o.Items, o.Concurrency)
		o.Progress = st // it serialises the console's writes itself
		defer st.stop()
	}
	rs := &runState{running: map[*scenario.State]context.CancelFunc{}}
	endWatch := watchStop(o, rs)
	defer endWatch()
	if o.Archive != nil {
		ids := make([]string, len(o.Items))
		for i, it := range o.Items {
			ids[i] = it.ID
		}
		o.Archive.SetOrder(ids) // reports list scenarios in run order, not finishing order
		o.Archive.SetFeatureSources(featureSources(o.Features, o.Items))
	}

	res := Result{Code: ExitPassed}
	recs := make([]*results.Scenario, len(o.Items))
	var recMu sync.Mutex // guards res.Code, recs and the archive's run.json updates
	record := func(i int, rec *results.Scenario) {
		recMu.Lock()
		defer recMu.Unlock()
		recs[i] = rec
		if st != nil && rec.Status != results.StatusNotRun {
			st.finished(rec)
		}
		// Blocked is not green either; a failure an applying known product defect excuses
		// is, and a known defect that no longer reproduces is not (results.Unexcused).
		if results.Unexcused(rec.Status, rec.KnownDefect) {
			res.Code = ExitFailed
		}
		if o.Archive != nil {
			if err := o.Archive.WriteScenario(rec); err != nil {
				fmt.Fprintf(o.Progress, "ERROR writing the record of %s: %v\n", rec.ID, err)
				res.Code = ExitFailed
			}
			if o.Run != nil && rec.Status != results.StatusNotRun {
				partial := res
				partial.Scenarios = written(recs)
				o.updateRun(partial)
			}
		}
	}
	runAll(ctx, o, rs, st, record)
	res.Scenarios = recs
	rs.mu.Lock()
	res.Interrupted = rs.interrupted
	res.FormatFiles = slices.Sorted(slices.Values(rs.formatFiles))
	formatErrs := rs.formatErrs
	rs.mu.Unlock()
	for _, err := range formatErrs {
		fmt.Fprintf(o.Progress, "ERROR writing a format file: %v\n", err)
		res.Code = ExitFailed
	}
	if res.Code == ExitPassed && !ranAny(res.Scenarios) && Count(o.Items).Selected > 0 {
		res.Code = ExitNothingRan
	}
	if res.Interrupted {
		res.Code = ExitInterrupted
	}
	if o.Run != nil {
		fillRun(o.Run, o.Items, res, o.Archive)
		o.Run.APIRequests = apiRequests(o.API, o.AppRoles)
		if o.Archive != nil {
			if err := o.Archive.Finish(o.Run); err != nil {
				fmt.Fprintf(o.Progress, "ERROR writing the run record: %v\n", err)
				if res.Code == ExitPassed {
					res.Code = ExitFailed
				}
			}
		}
	}
	return res
}

// withDefaults is o with its unset timeouts, console, exit and concurrency defaulted, the
// console serialised, and the known defects that apply to the product picked.
func (o Options) withDefaults() Options {
	if o.StepTimeout <= 0 {
		o.StepTimeout = 5 * time.Minute
	}
	if o.CleanupTimeout <= 0 {
		o.CleanupTimeout = 2 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Exit == nil {
		o.Exit = os.Exit
	}
	if o.Concurrency < 1 {
		o.Concurrency = 1
	}
	o.Progress = &LockedWriter{W: o.Progress}
	if o.Run != nil {
		o.applying = results.Applying(o.KnownDefects, o.Run.Product)
	}
	return o
}

// updateRun keeps run.json current with the records written so far (partial): a run killed
// now was interrupted, and says so.
func (o Options) updateRun(partial Result) {
	progress := *o.Run
	fillRun(&progress, o.Items, partial, o.Archive)
	progress.APIRequests = apiRequests(o.API, o.AppRoles)
	progress.State = results.RunInterrupted
	progress.ExitCode = nil // the run has not ended
	if err := o.Archive.UpdateRun(&progress); err != nil {
		fmt.Fprintf(o.Progress, "ERROR updating run.json: %v\n", err)
	}
}

// runAll records the items not to run, then starts the others in startOrder, up to
// o.Concurrency at once, and records each as it ends; once the run is interrupted, the rest
// are recorded not run. It returns when every item is recorded.
func runAll(ctx context.Context, o Options, rs *runState, st *status, record func(int, *results.Scenario)) {
	for i, it := range o.Items {
		if !it.Run {
			record(i, notRun(it, it.Reason))
		}
	}
	slots := make(chan struct{}, o.Concurrency)
	var wg sync.WaitGroup
	for _, i := range startOrder(o) {
		it := o.Items[i]
		slots <- struct{}{} // a free worker; scenarios start in startOrder
		rs.mu.Lock()
		interrupted := rs.interrupted
		rs.mu.Unlock()
		if interrupted {
			<-slots
			record(i, notRun(it, ReasonInterrupted))
			continue
		}
		// Printed here, not in the worker, so that START lines come in start order.
		fmt.Fprintf(o.Progress, "START %s (%s:%d)\n", it.ID, it.Feature.Path, it.Feature.Line)
		if st != nil {
			st.started(it.ID)
		}
		wg.Add(1)
		go func(i int, it Item) {
			defer wg.Done()
			defer func() { <-slots }()
			record(i, runOne(ctx, o, rs, it))
		}(i, it)
	}
	wg.Wait()
}

// featureSources are the texts of the items' feature files by path, for messages.ndjson. A
// file that cannot be read now is left out (messages.ndjson counts what it left out): it was
// read at discovery, and the run itself does not depend on it.
func featureSources(fsys fs.FS, items []Item) map[string][]byte {
	out := map[string][]byte{}
	for _, it := range items {
		if it.Feature == nil || fsys == nil {
			continue
		}
		if _, done := out[it.Feature.Path]; done {
			continue
		}
		if data, err := fs.ReadFile(fsys, it.Feature.Path); err == nil {
			out[it.Feature.Path] = data
		}
	}
	return out
}

// ranAny reports whether any scenario ran (passed or failed).
func ranAny(recs []*results.Scenario) bool {
	for _, r := range recs {
		if r.Status != results.StatusNotRun {
			return true
		}
	}
	return false
}

// watchStop acts on the run's stop contexts: Stop cancels the running scenarios (each ends
// interrupted, the rest are not started), StopNow kills their children and calls Exit(130).
// The returned function ends the watch.
func watchStop(o Options, rs *runState) (end func()) {
	if o.Stop == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-o.Stop.Done():
		}
		running, cancels := rs.interrupt()
		fmt.Fprintf(o.Progress, "INTERRUPT (%v): stopping the running scenarios and cleaning up; interrupt again to kill children and exit at once\n", signalOf(o.Stop))
		for _, cancel := range cancels {
			cancel()
		}
		select {
		case <-done:
			return
		case <-interrupt.Done(o.StopNow):
		}
		running, _ = rs.interrupt()
		fmt.Fprintf(o.Progress, "INTERRUPT (%v) again: killing child processes and exiting\n", signalOf(o.StopNow))
		for _, cur := range running {
			killed, err := cur.KillProcesses()
			for _, k := range killed {
				fmt.Fprintf(o.Progress, "killed %s\n", k)
			}
			if err != nil {
				fmt.Fprintf(o.Progress, "kill: %v\n", err)
			}
		}
		o.Exit(ExitInterrupted)
	}()
	return func() { close(done) }
}

// interrupt marks the run interrupted and returns its running scenarios with their cancels.
func (rs *runState) interrupt() ([]*scenario.State, []context.CancelFunc) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.interrupted = true
	var running []*scenario.State
	var cancels []context.CancelFunc
	for st, cancel := range rs.running {
		running = append(running, st)
		cancels = append(cancels, cancel)
	}
	return running, cancels
}

// signalOf names what stopped the run: the signal, or the cause of a stop context a caller
// cancelled without one.
func signalOf(ctx context.Context) any {
	if s := interrupt.SignalOf(ctx); s != nil {
		return s
	}
	return context.Cause(ctx)
}

func notRun(it Item, reason string) *results.Scenario {
	now := time.Now().UTC()
	rec := &results.Scenario{
		SchemaVersion: results.SchemaVersion,
		ID:            it.ID,
		Series:        it.Series,
		Extended:      it.Extended,
		Tags:          it.Tags(),
		Status:        results.StatusNotRun,
		Reason:        reason,
		Start:         now,
		End:           now,
	}
	if it.Feature != nil {
		setFeature(rec, it.Feature)
		rec.Steps = plannedSteps(it.Feature)
	}
	return rec
}

// runOne runs one scenario through its own godog suite, so that order, selection,
// interrupts and the record are the runner's, and a panic that escapes godog (After hooks
// are not recovered by godog) is caught here instead of killing the runner.
func runOne(parent context.Context, o Options, rs *runState, it Item) (rec *results.Scenario) {
	start := time.Now().UTC()
	rec = &results.Scenario{
		SchemaVersion: results.SchemaVersion,
		ID:            it.ID,
		Series:        it.Series,
		Extended:      it.Extended,
		Tags:          it.Feature.Tags,
		Start:         start,
	}
	setFeature(rec, it.Feature)

	log := o.Progress
	if o.Concurrency > 1 {
		// Interleaved step chatter of several scenarios is unreadable: the scenario's log
		// goes to scenario.log in its work dir, and only its slow-wait progress reaches the
		// console, prefixed with its id.
		filtered := &scenarioLog{id: it.ID, console: o.Progress}
		filtered.open(o.WorkRoot, safeName(it.ID))
		defer filtered.close()
		log = filtered
	}
	st, err := scenario.New(safeName(it.ID), it.Feature.Tags, o.WorkRoot, log)
	if err != nil {
		rec.Status = results.StatusFailed
		rec.Reason = err.Error()
		finish(o, rec)
		return rec
	}
	st.ID = it.ID
	st.API = o.API.Child()
	ctx, cancel := context.WithCancel(scenario.With(parent, st))
	defer cancel()
	defer rs.track(st, cancel)()

	steps := &stepLog{steps: plannedSteps(it.Feature)}
	var hookErrs hookErrors
	var files []formatFile
	code, panicked := runSuite(ctx, o, it, st, steps, &hookErrs, &files)
	if len(files) > 0 {
		written, err := publishFormats(files, o.redactor())
		rs.formatsWritten(written, err)
	}

	rec.Steps = steps.records()
	if len(rec.Steps) > 0 && !rec.Steps[0].Start.IsZero() {
		setup := rec.Steps[0].Start.Sub(start).Milliseconds()
		rec.SetupMS = &setup
	}
	setStatus(rec, code, panicked, &hookErrs, steps, ctx.Err() != nil)
	if o.Verify != nil && ctx.Err() == nil {
		if err := verify(o, st, it.Entry); err != nil && rec.Status == results.StatusPassed {
			rec.Status = results.StatusFailed
			rec.Reason = err.Error()
		}
	}
	if o.BeforeCleanup != nil {
		collectBeforeCleanup(o, st)
	}

	// Cleanup runs here, outside godog, so that it runs whatever happened inside: a
	// failed Before hook, a panic, an interrupt. A failed cleanup revokes a pass.
	rec.Cleanup = st.Cleanup(o.CleanupTimeout, o.KeepWorkDirs)
	if !rec.Cleanup.OK && rec.Status == results.StatusPassed {
		rec.Status = results.StatusFailed
		rec.Reason = "cleanup failed: " + rec.Cleanup.Error
	}
	st.Evidence(rec)
	rec.APIRequests = apiRequests(st.API, o.AppRoles) // after the cleanup: its deletes count too
	results.JudgeKnownDefect(rec, o.applying)         // on the whole record: assertions, steps, cleanup
	finish(o, rec)
	return rec
}

// track registers a running scenario's cancel for the interrupt (cancelled at once if the
// run is interrupted already); the returned function forgets it.
func (rs *runState) track(st *scenario.State, cancel context.CancelFunc) (untrack func()) {
	rs.mu.Lock()
	rs.running[st] = cancel
	if rs.interrupted {
		cancel()
	}
	rs.mu.Unlock()
	return func() {
		rs.mu.Lock()
		delete(rs.running, st)
		rs.mu.Unlock()
	}
}

// setStatus is the scenario's status from how godog ended (its exit code, a panic that
// escaped it, the hooks' errors), then from what ended it: an interrupt, or a step that
// found a precondition not met.
func setStatus(rec *results.Scenario, code int, panicked any, hookErrs *hookErrors, steps *stepLog, interrupted bool) {
	switch {
	case panicked != nil:
		rec.Status = results.StatusFailed
		rec.Reason = fmt.Sprintf("panic escaped godog: %v", panicked)
	case code == 0 && hookErrs.empty():
		rec.Status = results.StatusPassed
	default:
		rec.Status = results.StatusFailed
		rec.Reason = firstFailure(rec.Steps, hookErrs.list())
	}
	if interrupted && rec.Status != results.StatusPassed {
		// Its own status: the interrupt, not the SUT, ended it.
		rec.Status = results.StatusInterrupted
		rec.Reason = "interrupted: " + rec.Reason
	} else if pre, ok := steps.blockedBy(); ok && rec.Status == results.StatusFailed {
		// A step said a precondition is not met: the scenario says nothing about the SUT.
		rec.Status = results.StatusBlocked
		rec.Reason = "blocked: " + pre
	}
}

func setFeature(rec *results.Scenario, f *Feature) {
	rec.Name = f.Name
	rec.Feature = f.Feature
	rec.FeatureFile = f.Path
	rec.Line = int(f.Line)
}

func finish(o Options, rec *results.Scenario) {
	rec.End = time.Now().UTC()
	rec.DurationMS = rec.End.Sub(rec.Start).Milliseconds()
	line := fmt.Sprintf("END   %s %s %s", rec.ID, rec.Status, rec.End.Sub(rec.Start).Round(time.Millisecond))
	if m := rec.KnownDefect; m != nil {
		line += " — " + m.Text()
	}
	if rec.Reason != "" && rec.Status != results.StatusPassed {
		line += " — " + rec.ReasonLine()
	}
	fmt.Fprintln(o.Progress, line)
}

// runSuite runs the scenario's godog suite. The files of --format name:path are written
// into the scenario's work dir and listed in files, for publishFormats.
func runSuite(ctx context.Context, o Options, it Item, st *scenario.State, steps *stepLog, hookErrs *hookErrors, files *[]formatFile) (code int, panicked any) {
	defer func() {
		if p := recover(); p != nil {
			panicked = fmt.Sprintf("%v\n%s", p, debug.Stack())
		}
	}()
	logFile, err := os.Create(filepath.Join(st.WorkDir, "godog.log"))
	if err != nil {
		return 1, fmt.Sprintf("create godog log: %v", err)
	}
	defer logFile.Close()
	formats := []string{"pretty"}
	for _, f := range o.Formats {
		if ff, ok := fileFormat(f, it.ID, st.WorkDir, len(*files)); ok {
			if err := os.MkdirAll(filepath.Dir(ff.work), 0o755); err != nil {
				return 1, fmt.Sprintf("--format %s: %v", f, err)
			}
			*files = append(*files, ff)
			formats = append(formats, ff.name+":"+ff.work)
			continue
		}
		formats = append(formats, f)
	}
	reg := func(sc *godog.ScenarioContext) {
		// The index learns the definitions as godog does, so a step's record can name the
		// definition it ran (its handler's file:line, as `flowtest steps` shows it).
		defs := &stepdef.Index{}
		registry := stepdef.Registry{SC: sc, Timeout: o.StepTimeout, OnHookError: hookErrs.add, Index: defs}
		sc.Before(func(ctx context.Context, p *godog.Scenario) (context.Context, error) {
			ctx = scenario.With(ctx, st)
			// Waits report progress to the scenario's log and land in its record, with
			// their named limits stretched by the run's scale.
			ctx = wait.WithConfig(ctx, wait.Config{Progress: st.Log, Scale: o.TimeoutScale, OnDone: st.AddWait})
			if o.BeforeScenario != nil {
				if err := o.BeforeScenario(ctx, st); err != nil {
					return ctx, fmt.Errorf("prepare scenario: %w", err)
				}
			}
			return ctx, nil
		})
		sc.StepContext().Before(func(ctx context.Context, s *godog.Step) (context.Context, error) {
			steps.started(s)
			return ctx, nil
		})
		sc.StepContext().After(func(ctx context.Context, s *godog.Step, status godog.StepResultStatus, err error) (context.Context, error) {
			steps.finished(s, status, err, matchOf(defs.Defs(), s.Text))
			return ctx, nil
		})
		if o.Initialize != nil {
			o.Initialize(sc, registry)
		}
	}
	suite := godog.TestSuite{
		Name:                it.ID,
		ScenarioInitializer: reg,
		Options: &godog.Options{
			FS:    o.Features,
			Paths: []string{fmt.Sprintf("%s:%d", it.Feature.Path, it.Feature.Line)},
			// The id tag picks this scenario's row out of a Scenario Outline (the line selects
			// every row); for a plain scenario it selects what the line does.
			Tags:           "@" + it.ID,
			Format:         strings.Join(formats, ","),
			Output:         logFile,
			Strict:         true,
			NoColors:       true,
			Concurrency:    1,
			DefaultContext: ctx,
		},
	}
	return suite.Run(), nil
}

// perScenarioFormat gives a file-writing formatter one file per scenario ("junit:out.xml"
// becomes "junit:out-<id>.xml"), since the runner runs one godog suite per scenario.
func perScenarioFormat(f, id string) string {
	name, path, ok := strings.Cut(f, ":")
	if !ok || path == "" {
		return f
	}
	ext := filepath.Ext(path)
	return name + ":" + strings.TrimSuffix(path, ext) + "-" + id + ext
}

// formatFile is one scenario's file of a --format name:path. godog writes it raw into the
// scenario's work dir (work); publishFormats copies it through the archive's redactor to
// dest, the per-scenario name of path (perScenarioFormat). godog writes formatter output
// straight to the file, so redacting on the way out is the one place every format (junit,
// cucumber, pretty, …) passes.
type formatFile struct {
	name, work, dest string
}

// fileFormat is the formatFile of format f for scenario id, the n-th of the scenario; false
// for a formatter without a file (its output goes to the scenario's log).
func fileFormat(f, id, workDir string, n int) (formatFile, bool) {
	name, dest, ok := strings.Cut(perScenarioFormat(f, id), ":")
	if !ok || dest == "" {
		return formatFile{}, false
	}
	work := filepath.Join(workDir, "formats", fmt.Sprintf("%d-%s", n, safeName(filepath.Base(dest))))
	return formatFile{name: name, work: work, dest: dest}, true
}

// publishFormats writes each scenario format file to its destination through the archive's
// redacting writer (results.Writer, as bytes: godog's keys are not flowtest's): the raw file
// stays in the work dir, the destination is replaced atomically (a reader never sees a
// half-written or unredacted file) with the archive's file mode. It returns the destinations
// written.
func publishFormats(files []formatFile, red *redact.Redactor) ([]string, error) {
	var written []string
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f.work)
		if err != nil {
			errs = append(errs, fmt.Errorf("--format %s:%s: godog wrote no file: %w", f.name, f.dest, err))
			continue
		}
		w := results.NewWriter(filepath.Dir(f.dest), red, results.JSONAsBytes)
		if err := w.WriteFile(filepath.Base(f.dest), data); err != nil {
			errs = append(errs, fmt.Errorf("--format %s:%s: %w", f.name, f.dest, err))
			continue
		}
		written = append(written, f.dest)
	}
	return written, errors.Join(errs...)
}

// stepLog keeps one record per step of the scenario, pre-filled as skipped.
// collectBeforeCleanup runs o.BeforeCleanup with its own deadline, recovering a panic into a
// note: evidence gathering never fails a scenario.
func collectBeforeCleanup(o Options, st *scenario.State) {
	ctx, cancel := context.WithTimeout(apicount.NewContext(context.Background(), st.API), o.CleanupTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			st.Note("evidence before cleanup", fmt.Sprintf("panicked: %v", p))
		}
	}()
	o.BeforeCleanup(ctx, st)
}

// verify runs o.Verify with its own deadline; a panic is its error.
func verify(o Options, st *scenario.State, e Entry) (err error) {
	ctx, cancel := context.WithTimeout(apicount.NewContext(context.Background(), st.API), o.CleanupTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("verify after the steps panicked: %v", p)
		}
	}()
	return o.Verify(ctx, st, e)
}

type stepLog struct {
	mu      sync.Mutex
	steps   []results.Step
	next    int
	start   time.Time
	blocked string // the precondition a step reported as not met (scenario.Blocked)
}

// blockedBy returns the precondition a step reported as not met, if one did.
func (l *stepLog) blockedBy() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.blocked, l.blocked != ""
}

// plannedSteps are the records of a scenario's steps before it runs, all skipped: the text as
// written ("Given …"), its keyword and its line in the feature file.
func plannedSteps(f *Feature) []results.Step {
	out := make([]results.Step, 0, len(f.StepText))
	for i, t := range f.StepText {
		kw, _, _ := strings.Cut(t, " ")
		st := results.Step{Text: t, Keyword: kw, Status: "skipped"}
		if i < len(f.StepLines) {
			st.Line = int(f.StepLines[i])
		}
		out = append(out, st)
	}
	return out
}

// matchOf is the definition godog runs for a step's text: the first registered whose
// expression matches it (godog's own rule; a strict run refuses an ambiguous step before it
// runs). Nil for an undefined step.
func matchOf(defs []stepdef.Def, text string) *results.StepMatch {
	m := stepindex.Matches(defs, text)
	if len(m) == 0 {
		return nil
	}
	d := defs[m[0]]
	loc := stepindex.ShortName(d.Handler)
	if d.File != "" {
		loc = fmt.Sprintf("%s:%d", stepindex.RelFile(d), d.Line)
	}
	return &results.StepMatch{Location: loc, Pattern: d.Expr}
}

func (l *stepLog) started(s *godog.Step) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start = time.Now()
}

func (l *stepLog) finished(s *godog.Step, status godog.StepResultStatus, err error, match *results.StepMatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := results.Step{Text: s.Text, Status: status.String(), DurationMS: time.Since(l.start).Milliseconds(), Start: l.start.UTC(), Match: match}
	if err != nil {
		r.Error = err.Error()
		if pre, ok := scenario.IsBlocked(err); ok && l.blocked == "" {
			l.blocked = pre
		}
	}
	// Match by text from the current position: steps finish in order.
	for i := l.next; i < len(l.steps); i++ {
		if strings.HasSuffix(l.steps[i].Text, " "+s.Text) {
			r.Keyword = strings.TrimSuffix(l.steps[i].Text, " "+s.Text)
			r.Text, r.Line = l.steps[i].Text, l.steps[i].Line
			l.steps[i] = r
			l.next = i + 1
			return
		}
	}
	l.steps = append(l.steps, r)
}

func (l *stepLog) records() []results.Step {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]results.Step(nil), l.steps...)
}

type hookErrors struct {
	mu   sync.Mutex
	errs []error
}

func (h *hookErrors) add(err error) {
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
}
func (h *hookErrors) empty() bool { return len(h.list()) == 0 }
func (h *hookErrors) list() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.errs...)
}

func firstFailure(steps []results.Step, hookErrs []error) string {
	for _, s := range steps {
		if s.Status == "failed" || s.Status == "undefined" || s.Status == "pending" || s.Status == "ambiguous" {
			if s.Error != "" {
				return fmt.Sprintf("step %q %s: %s", s.Text, s.Status, s.Error)
			}
			return fmt.Sprintf("step %q %s", s.Text, s.Status)
		}
	}
	if len(hookErrs) > 0 {
		return errors.Join(hookErrs...).Error()
	}
	return "scenario failed (see godog.log)"
}

func safeName(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
}

func fillRun(run *results.Run, items []Item, res Result, arch *results.Archive) {
	run.SchemaVersion = results.SchemaVersion
	run.RunOrder = nil
	for _, it := range items {
		run.RunOrder = append(run.RunOrder, it.ID)
	}
	if arch != nil {
		run.Scenarios = arch.Summaries()
	} else {
		run.Scenarios = nil
		for _, s := range res.Scenarios {
			run.Scenarios = append(run.Scenarios, results.Summarize(s, ""))
		}
	}
	for i := range run.Scenarios {
		if run.Scenarios[i].Status == results.StatusNotRun {
			run.Scenarios[i].NotRunCategory = notRunCategory(run.Scenarios[i].Reason)
		}
	}
	run.Totals = results.ComputeTotals(run.Scenarios)
	code := res.Code
	run.ExitCode = &code
	run.Evidence = evidence(run, items, res)
	run.State = results.RunComplete
	if res.Interrupted {
		run.State = results.RunInterrupted
	}
	run.End = time.Now().UTC()
	run.Runner = results.ComputeRunnerCost(run.Scenarios, run.End.Sub(run.Start), processCPU())
}

func notRunCategory(reason string) string {
	switch {
	case reason == ReasonFilteredByTag || reason == ReasonNotInRerun || results.IsOtherShard(reason):
		return results.NotRunTag
	case strings.HasPrefix(reason, ReasonNeedsPrefix):
		return results.NotRunPlatform // the only need a machine cannot meet is its OS
	case reason == ReasonNotImplemented:
		return results.NotRunNotImplemented
	default:
		return results.NotRunInterrupted
	}
}

// evidence makes one acceptance-record row per scenario that ran: the criterion (acceptance
// numbers and scenario), where it ran, what came of it, and the scenario's known limits.
func evidence(run *results.Run, items []Item, res Result) []results.EvidenceRow {
	status := map[string]*results.Scenario{}
	for _, s := range res.Scenarios {
		status[s.ID] = s
	}
	env := run.Target
	if run.Profile != "" {
		env += " / profile " + run.Profile
	}
	var rows []results.EvidenceRow
	for _, it := range items {
		s, ok := status[it.ID]
		if !ok || s.Status == results.StatusNotRun {
			continue
		}
		criterion := it.ID
		if len(it.Acceptance) > 0 {
			criterion = "acceptance " + strings.Join(it.Acceptance, "・") + " (" + it.ID + ")"
		}
		if it.Feature != nil {
			criterion += ": " + it.Feature.Name
		}
		result := s.Status
		held := 0
		for _, a := range s.Assertions {
			if a.OK {
				held++
			}
		}
		result += fmt.Sprintf(" (%d/%d assertions held)", held, len(s.Assertions))
		limits := it.Limits
		if limits == "" {
			limits = "-"
		}
		rows = append(rows, results.EvidenceRow{Criterion: criterion, Environment: env, Result: result, Limits: limits, Scenarios: []string{it.ID}})
	}
	return rows
}
