package cli

// The exploration the session executes for `flowtest explore` (explore.go parses the
// command): the explore flags' values, and one runner run per schedule under the explorer.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/app/explorer"
	"github.com/ksqlflow/flowtest/internal/app/isolation"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
	"github.com/ksqlflow/flowtest/internal/steps"
)

// exploreSpec is what `flowtest explore` adds to a run: the scenario, the strategy and the
// budget. The scenario runs through the run path (preflight, lock, target), once per schedule.
type exploreSpec struct {
	id         string
	schedules  int
	budget     time.Duration
	strategy   string
	depth      int
	bound      int
	seed       uint64
	replay     string
	shrinkRuns int
	processes  []string
	// via: the manifest redirected `flowtest explore <via.From>` to id (explore: {via: …}).
	via *explorer.Redirect
	// interrupt is the command's (invocation.stop): cancelled, no new schedule starts.
	interrupt context.Context
	// json is --json: the summary goes to jsonOut (the command's stdout) as one object, and
	// everything else the command prints to its stderr.
	json    bool
	jsonOut io.Writer
}

// requested is the scenario the command named (the redirect's source, else the explored one).
func (sp *exploreSpec) requested() string {
	if sp.via != nil {
		return sp.via.From
	}
	return sp.id
}

// bind declares explore's own flags on fs, bound to sp, with their defaults. Their values are
// checked as they are set: a bad one is refused naming the flag and the value.
func (sp *exploreSpec) bind(fs *flag.FlagSet) {
	sp.strategy, sp.depth, sp.bound, sp.seed, sp.shrinkRuns = "random", 3, 2, 1, 12
	fs.Var(positiveInt(&sp.schedules), "schedules", "run `N` schedules, each one run of the scenario (default 50; or --time)")
	fs.Var(&durationValue{p: &sp.budget, positive: true}, "time", "run schedules for `D`, a duration (e.g. 10m), instead of a number of them")
	fs.StringVar(&sp.strategy, "strategy", sp.strategy, "which held write is released next: random (seeded), pct (bugs of depth --depth) or dfs (orders with at most --bound preemptions)")
	fs.Var(positiveInt(&sp.depth), "depth", "pct: the depth `d` of the orderings it aims at")
	fs.Var(countInt(&sp.bound), "bound", "dfs: the preemption bound `b` (0 or more)")
	fs.Var((*uint64Flag)(&sp.seed), "seed", "seed `S` of the strategy's choices")
	fs.StringVar(&sp.replay, "replay", "", "run once the schedule of `FILE` (schedules/<n>.json of an earlier exploration)")
	fs.Var(countInt(&sp.shrinkRuns), "shrink-runs", "`n` runs at most spent shrinking a violating schedule (0: no shrinking)")
	fs.BoolVar(&sp.json, "json", false, "print the summary as one JSON object on stdout, and the progress on stderr (docs/explore.md)")
}

// exploreRuns is the session's execution under `flowtest explore`.
func (s *session) exploreRuns(ctx context.Context, tgt *target.Target, stdout io.Writer) int {
	sp := s.extras.explore
	it, ok := s.explored(stdout)
	if !ok {
		return runner.ExitRefused
	}
	st, _ := schedule.NewStrategy(sp.strategy, sp.seed, sp.depth, sp.bound)

	secrets := s.secretsFor(tgt)
	red := redact.New(secrets, tgt.AppRoles())
	stdout = redactConsole(stdout, red)
	dir, err := results.NewDatedDir(s.flags.out, results.SanitizeLabel(s.archiveLabel()), time.Now())
	if err != nil {
		fmt.Fprintf(stdout, "flowtest explore: --out %q: %v\n", s.flags.out, err)
		return runner.ExitRefused
	}
	workers := s.exploreWorkers()
	if sp.via != nil {
		fmt.Fprintf(stdout, "flowtest explore: %s is explored through %s (its manifest entry: explore via): %s\n", sp.via.From, sp.via.To, sp.via.Reason)
	}
	fmt.Fprintf(stdout, "flowtest %s explore %s: target %s, strategy %s, seed %d, %d at once, archive %s\n",
		Version, sp.id, tgt.Name, st.Name(), sp.seed, workers, dir)
	fmt.Fprintf(stdout, "product: %s\n", tgt.Product.Label())
	x := &exploreRunner{s: s, tgt: tgt, sp: sp, dir: dir, rsec: &runSecrets{red: red, secrets: secrets}}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if sp.interrupt != nil {
		defer context.AfterFunc(sp.interrupt, func() {
			fmt.Fprintln(stdout, "flowtest explore: interrupted: no new schedule starts")
			cancel()
		})()
	}
	var rep *explorer.Report
	if sp.replay != "" {
		f, _ := explorer.LoadReplay(sp.replay) // read by cmdExplore already
		rep, err = explorer.Explore(ctx, x, explorer.Options{Scenario: sp.id, Strategy: &replayStrategy{f.Replay}, Schedules: 1, Workers: 1, Progress: stdout})
	} else {
		rep, err = explorer.Explore(ctx, x, explorer.Options{Scenario: sp.id, Strategy: st, Schedules: sp.schedules, Time: sp.budget,
			Workers: workers, ShrinkRuns: sp.shrinkRuns, Progress: stdout})
	}
	if rep == nil {
		fmt.Fprintf(stdout, "flowtest explore: %v\n", err)
		return runner.ExitRefused
	}
	rep.Seed = sp.seed
	rep.Via = sp.via
	rep.Product = tgt.Product.Label()
	if werr := s.writeExploration(dir, rep, it, tgt, red); werr != nil {
		fmt.Fprintf(stdout, "flowtest explore: %v\n", werr)
		return runner.ExitFailed
	}
	if werr := writeExploreSummary(stdout, sp.jsonOut, red, exploreSummary(rep, dir)); werr != nil {
		fmt.Fprintf(stdout, "flowtest explore: %v\n", werr)
		return runner.ExitFailed
	}
	var appIDs []string
	for id := range tgt.AppRoles() {
		appIDs = append(appIDs, id)
	}
	if !leakFree(stdout, dir, x.rsec.snapshot(), appIDs) {
		return runner.ExitFailed
	}
	fmt.Fprintf(stdout, "archive verify: no secret or raw app id in %s\n", dir)
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "flowtest explore: %v\n", err)
		return runner.ExitFailed
	case ctx.Err() != nil:
		return runner.ExitInterrupted
	case len(rep.Violations) > 0:
		return runner.ExitFailed
	}
	return runner.ExitPassed
}

// explored is the scenario explore explores, which becomes the session's only item (the
// others of the selection are not records of a schedule), and its explore processes;
// false, said on stdout, if the manifest does not let it be explored.
func (s *session) explored(stdout io.Writer) (runner.Item, bool) {
	sp := s.extras.explore
	var it runner.Item
	for _, i := range s.items {
		if i.ID == sp.id {
			it = i
		}
	}
	if !it.Run {
		fmt.Fprintf(stdout, "flowtest explore: %s is not a runnable scenario of the manifest (%s)\n", sp.id, it.Reason)
		return it, false
	}
	s.items = []runner.Item{it}
	if !it.Explorable() {
		fmt.Fprintf(stdout, "flowtest explore: %s is not declared explorable: its manifest entry has no explore: {processes: [...]} (a race scenario that cannot be explored says why beside its entry)\n", sp.id)
		return it, false
	}
	sp.processes = it.Explore.Processes
	return it, true
}

// exploreWorkers is how many schedules run at once: live one tenant, serially; on the sandbox
// the run's concurrency (each on an emulator of its own); a replay one.
func (s *session) exploreWorkers() int {
	if s.bin == "" || s.extras.explore.replay != "" {
		return 1
	}
	return s.concurrency()
}

// writeExploration writes the exploration's report (explorer.Write: schedules, violations,
// generated scenarios), its README.md and index.html into dir, through the redacting writer.
func (s *session) writeExploration(dir string, rep *explorer.Report, it runner.Item, tgt *target.Target, red *redact.Redactor) error {
	sp := s.extras.explore
	replayCmd := func(file string) string { return fmt.Sprintf("flowtest explore %s --replay %s", sp.id, file) }
	out := results.NewWriter(dir, red, results.JSONText)
	if err := explorer.Write(dir, rep, replayCmd, s.gherkinSource(it, sp.processes), out); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	readme := fmt.Sprintf("# flowtest explore %s\n\nRunner %s, target %s, %s/%s. Each schedule's run archive is under runs/; every schedule is listed in index.html.\n\n%s",
		sp.requested(), Version, tgt.Name, runtime.GOOS, runtime.GOARCH, explorer.Markdown(rep))
	page, err := explorer.HTML(rep)
	if err == nil {
		err = out.WriteFile("README.md", []byte(readme))
	}
	if err == nil {
		err = out.WriteFile("index.html", []byte(page))
	}
	return err
}

// gherkinSource is what the generated scenario of a violating schedule is made from: the
// explored scenario's feature text (nil for a row of a Scenario Outline, which has no
// steps of its own to copy, or when the file cannot be read).
func (s *session) gherkinSource(it runner.Item, processes []string) *explorer.GherkinSource {
	if it.Feature == nil || it.Feature.Row != 0 {
		return nil
	}
	text, err := fs.ReadFile(s.fsys, it.Feature.Path)
	if err != nil {
		return nil
	}
	needs := make([]string, len(it.Needs))
	for i, n := range it.Needs {
		needs[i] = string(n)
	}
	return &explorer.GherkinSource{ID: it.ID, Series: it.Series, Needs: needs, Processes: processes,
		FeatureText: string(text), Path: it.Feature.Path, ScenarioLine: int(it.Feature.Line)}
}

// replayStrategy plans exactly one schedule: the replay file's order.
type replayStrategy struct{ order []schedule.Signature }

func (r *replayStrategy) Name() string { return "replay" }

func (r *replayStrategy) Plan(n int) (schedule.Chooser, bool) {
	if n > 0 {
		return nil, false
	}
	return schedule.Replay(r.order), false
}

func (r *replayStrategy) Executed(int, schedule.Result) {}

// exploreRunner runs the explored scenario once per schedule: fresh scopes (through the
// preflight's identifier and fixture rules), on the sandbox an emulator of its own, the
// scheduler's gate on the manifest's processes, and a run archive under runs/.
type exploreRunner struct {
	s    *session
	tgt  *target.Target
	sp   *exploreSpec
	dir  string
	rsec *runSecrets
	mu   sync.Mutex // the session's work-dir record and preparation counter
	runs int
}

func (x *exploreRunner) Run(ctx context.Context, n int, c schedule.Chooser) (explorer.Outcome, error) {
	s := x.s
	x.mu.Lock()
	x.runs++
	k := x.runs // shrink replays run with n = 0: every run needs its own dirs
	x.mu.Unlock()
	fixtures, err := filepath.Abs(filepath.Join(s.flags.features, "fixtures"))
	if err != nil {
		return explorer.Outcome{}, err
	}
	p, err := x.newScopes(k, fixtures)
	if err != nil {
		return explorer.Outcome{}, err
	}
	work := filepath.Join(s.workDir, fmt.Sprintf("explore-%d", k), "scenarios")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return explorer.Outcome{}, err
	}
	arch, err := results.Create(filepath.Join(x.dir, "runs"), fmt.Sprintf("run-%d", k), time.Now(), x.rsec.red)
	if err != nil {
		return explorer.Outcome{}, err
	}
	suite := x.suite(fixtures, p, arch.Dir())
	wctx := wait.WithConfig(context.Background(), wait.Config{Scale: s.cfg.TimeoutScale, Progress: io.Discard})
	sched := schedule.New(schedule.Config{Roles: x.tgt.AppRoles(), Chooser: c, Expect: x.sp.processes}.WithScale(wctx))
	schedCtx, stopSched := context.WithCancel(ctx)
	defer stopSched()
	before := suite.BeforeScenario
	conc := 1
	if s.bin != "" {
		iso := isolation.New(isolation.Options{Bin: s.bin, Profile: x.tgt.Profile, Latency: sandboxLatency(s.flags.readLatency),
			Run: x.tgt, Secrets: x.rsec, Prepare: prepareOn(suite)})
		before = iso.BeforeScenario
		conc = 2 // the runner's concurrent path: the scenario's log goes to its work dir
	}
	var out explorer.Outcome
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			out.Result = sched.Stop()
		}
	}
	defer stop()
	run := &results.Run{
		RunnerVersion: Version, Flowtest: build(), FeaturesDigest: s.featuresDigest, Target: x.tgt.Name, Profile: x.tgt.Profile, OS: runtime.GOOS + "/" + runtime.GOARCH,
		TagExpression: "@" + x.sp.id, Environment: x.tgt.Describe(), Start: time.Now().UTC(), Command: s.extras.command,
		Product: productRecord(x.tgt),
	}
	run.Environment["explore_schedule"] = fmt.Sprint(k)
	res := runner.Execute(ctx, runner.Options{
		Features: s.fsys, Items: s.items, Initialize: suite.Initialize,
		BeforeScenario: func(ctx context.Context, st *scenario.State) error {
			steps.Explore(st, sched, x.sp.processes)
			sched.Start(schedCtx)
			return before(ctx, st)
		},
		BeforeCleanup: func(ctx context.Context, st *scenario.State) {
			stop() // the cleanup's writes pass
			state, audit, request, err := steps.FinalRecords(ctx, st)
			if err != nil {
				st.Note("explore: final records", err.Error())
			}
			out.History = schedule.History{State: state, Audit: audit, Request: request}
		},
		Concurrency: conc, StepTimeoutName: "--step-timeout", StepTimeout: stepDeadline(s.flags.stepTimeout, s.cfg.TimeoutScale), TimeoutScale: s.cfg.TimeoutScale,
		WorkRoot: work, KeepWorkDirs: s.flags.keepWorkDirs,
		Archive: arch, Run: run, Progress: io.Discard,
		Exit: func(code int) { x.tgt.Abort(); os.Exit(code) },
	})
	stop()
	sched.Wait()
	if len(res.Scenarios) != 1 || res.Scenarios[0] == nil {
		return out, fmt.Errorf("%s did not run (exit %d)", x.sp.id, res.Code)
	}
	x.judge(&out, res.Scenarios[0], arch.Dir())
	return out, nil
}

// suite is the step library of one schedule's run: its own scopes and archive, on the
// exploration's target, logging nowhere (the schedules' progress is the explorer's).
func (x *exploreRunner) suite(fixtures string, p *preparation, archDir string) *steps.Suite {
	s := x.s
	archAbs, _ := filepath.Abs(archDir)
	self, _ := os.Executable()
	return &steps.Suite{
		Target: x.tgt, FixturesDir: fixtures, ConfirmedBy: s.flags.confirmedBy,
		Scopes: p.scopes, ArchiveDir: archAbs, Log: io.Discard,
		Cleaner: newCleaner(x.tgt), CheckIdentifiers: s.checkLaterIdentifiers,
		CheckFixture: s.checkLaterFixture, Redact: x.rsec, FlowtestBin: self,
	}
}

// newScopes prepares the k-th run's own scopes and fixtures (shrink replays run too, so every
// run needs its own), checked by the preflight's identifier and fixture rules and recorded
// in the session's work-dir record.
func (x *exploreRunner) newScopes(k int, fixtures string) (*preparation, error) {
	s := x.s
	p, err := prepare(s.items, fixtures, s.cfg.Profile(), filepath.Join(s.workDir, fmt.Sprintf("explore-%d", k)), s.flags.confirmedBy)
	if err != nil {
		return nil, fmt.Errorf("new scopes: %w", err)
	}
	if err := violations("identifiers", safety.CheckIdentifiers(s.in, p.idents)); err != nil {
		return nil, err
	}
	if err := violations("fixtures", safety.CheckFixtures(s.in, p.fixtures)); err != nil {
		return nil, err
	}
	if s.work != nil {
		x.mu.Lock()
		err := s.work.AddScopes(p.scopeIDs()...)
		x.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// judge fills in out from the scenario record of one schedule: passed or why not, the first
// failed assertion, its archive (relative to the exploration's folder) and its branch.
func (x *exploreRunner) judge(out *explorer.Outcome, rec *results.Scenario, archDir string) {
	out.Passed = rec.Status == results.StatusPassed
	if !out.Passed {
		out.Reason = string(rec.Status) + ": " + rec.ReasonLine()
	}
	for _, a := range rec.Assertions {
		if !a.OK {
			out.Assertion = a.What
			break
		}
	}
	if rel, err := filepath.Rel(x.dir, archDir); err == nil {
		out.Archive = filepath.ToSlash(rel)
	}
	for _, note := range rec.Notes {
		if note.What == schedule.BranchNote {
			out.Branch = note.Detail
		}
	}
}
