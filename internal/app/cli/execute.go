package cli

// The run path's execution against a resolved target: one run, --repeat (repeat.go) or an
// exploration (explorerun.go), into an archive.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ksqlflow/flowtest/internal/app/defects"
	"github.com/ksqlflow/flowtest/internal/app/isolation"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
	"github.com/ksqlflow/flowtest/internal/steps"
)

// sandboxLatency makes the business apps answer like kintone (by default about half a second
// per read, which gives the long-read fixtures their documented durations, job-longread.sql).
// No scenario depends on it: windows a scenario needs are held by barriers (internal/steps/proxy/windows.go).
func sandboxLatency(d time.Duration) map[string]time.Duration {
	return map[string]time.Duration{"customers": d, "deals": d}
}

func resolvedOf(t *target.Target) safety.Resolved {
	apps := map[safety.AppRole]safety.ResolvedApp{}
	for role, a := range t.Apps {
		apps[safety.AppRole(role)] = safety.ResolvedApp{ID: a.ID, Full: a.Tokens["full"], Read: a.Tokens["read"]}
	}
	return safety.NewResolved(t.BaseURL, apps)
}

// execute runs the scenarios against a resolved target and writes the archive; with
// --repeat N, N times (repeat.go).
func (s *session) execute(ctx context.Context, tgt *target.Target, stdout io.Writer) int {
	if s.extras.explore != nil {
		return s.exploreRuns(ctx, tgt, stdout)
	}
	if s.flags.repeat > 1 {
		return s.repeatRuns(ctx, tgt, stdout)
	}
	code, _ := s.executeOnce(ctx, tgt, stdout, s.runLabel())
	return code
}

// runLabel is the archive label: the tag expression (or gate), and the shard.
func (s *session) runLabel() string {
	l := s.archiveLabel()
	if k, n, err := runner.ParseShard(s.flags.shard); err == nil && s.flags.shard != "" {
		l += fmt.Sprintf("-shard%dof%d", k, n)
	}
	return l
}

// executeOnce runs the selection once into a new archive labelled label.
func (s *session) executeOnce(ctx context.Context, tgt *target.Target, stdout io.Writer, label string) (int, runner.Result) {
	f := s.flags
	secrets := s.secretsFor(tgt)
	red := redact.New(secrets, tgt.AppRoles())
	stdout = redactConsole(stdout, red) // the console shows what the archive shows
	arch, err := results.Create(f.out, label, time.Now(), red)
	if err != nil {
		// No scenario has started: a refusal, not a failed scenario.
		fmt.Fprintf(stdout, "flowtest run: --out %q: create the results archive: %v\n", f.out, err)
		return runner.ExitRefused, runner.Result{}
	}
	if s.extras.gate != nil {
		arch.SetGate(s.extras.gate) // Finish completes it and writes gate.json
	}
	fmt.Fprintf(stdout, "flowtest %s: target %s, profile %s, archive %s\n", Version, tgt.Name, tgt.Profile, arch.Dir())
	fmt.Fprintf(stdout, "product: %s\n", tgt.Product.Label())
	rsec := &runSecrets{red: red, secrets: secrets}
	suite := s.suite(tgt, arch, rsec, stdout)
	conc := s.concurrency()
	before, attempts, iso := s.scenarioHooks(tgt, suite, rsec)
	if iso != nil {
		fmt.Fprintf(stdout, "concurrency %d: each scenario on a kintone emulator of its own; its log in its work dir, wait progress here\n", conc)
	}
	work := filepath.Join(s.workDir, "scenarios")
	if err := os.MkdirAll(work, 0o755); err != nil {
		fmt.Fprintf(stdout, "flowtest run: %v\n", err)
		return runner.ExitFailed, runner.Result{}
	}
	run := s.runRecord(tgt)
	res := runner.Execute(ctx, runner.Options{
		Features: s.fsys, Items: s.items,
		Initialize: suite.Initialize, BeforeScenario: before, BeforeCleanup: attempts, Verify: checkInvariants, Concurrency: conc,
		StepTimeoutName: "--step-timeout", StepTimeout: stepDeadline(f.stepTimeout, s.cfg.TimeoutScale), TimeoutScale: s.cfg.TimeoutScale, WorkRoot: work, KeepWorkDirs: f.keepWorkDirs, FailFast: f.failFast,
		Formats: f.formats, Archive: arch, Run: run, Progress: stdout, Status: s.status(tgt.Name, arch.Dir()), Stop: s.stop, StopNow: s.now,
		API: s.api, AppRoles: tgt.AppRoles(), KnownDefects: f.knownDefects,
		// A second interrupt exits at once: the emulator must not outlive the runner.
		Exit: func(code int) {
			if iso != nil {
				iso.Abort()
			}
			tgt.Abort()
			os.Exit(code)
		},
	})
	fmt.Fprintf(stdout, "%s — archive %s\n", results.RunTotalsText(run), arch.Dir())
	if err := writeCoverage(stdout, arch, run, res.Scenarios, f.features); err != nil {
		fmt.Fprintf(stdout, "WARNING: %s not written: %v\n", results.CoverageFile, err)
	}
	for _, line := range results.StaleKnownDefects(run.Scenarios) {
		fmt.Fprintf(stdout, "WARNING: %s; exit %d until features/%s is updated\n", line, runner.ExitFailed, runner.KnownDefectsFile)
	}
	for _, line := range staleExemptions(res.Scenarios) {
		fmt.Fprintf(stdout, "WARNING: %s\n", line)
	}
	if run.Runner != nil {
		// The closing line: what the run cost the runner itself (run.json has it too).
		defer fmt.Fprintln(stdout, results.CostText(run.Runner))
	}
	if !outputsClean(stdout, tgt, arch.Dir(), res, secrets) {
		return runner.ExitFailed, res
	}
	fmt.Fprintf(stdout, "archive verify: no secret or raw app id in %s\n", arch.Dir())
	if res.Code == runner.ExitNothingRan {
		fmt.Fprintf(stdout, "nothing ran: every selected scenario was not run (not implemented, or needs another platform); exit %d, not green\n", res.Code)
	}
	return res.Code, res
}

// suite is the step library of one run on tgt into arch.
func (s *session) suite(tgt *target.Target, arch *results.Archive, rsec *runSecrets, log io.Writer) *steps.Suite {
	fixtures, _ := filepath.Abs(filepath.Join(s.flags.features, "fixtures"))
	archAbs, _ := filepath.Abs(arch.Dir())
	self, _ := os.Executable() // the CSV steps' kSQL-Flow wrapper; if unknown, those steps say so
	return &steps.Suite{
		Target: tgt, FixturesDir: fixtures, ConfirmedBy: s.flags.confirmedBy,
		Scopes: s.prep.scopes, ArchiveDir: archAbs, Log: log,
		Cleaner: newCleaner(tgt), CheckIdentifiers: s.checkLaterIdentifiers,
		CheckFixture: s.checkLaterFixture,
		Redact:       rsec, FlowtestBin: self,
	}
}

// scenarioHooks are the runner's BeforeScenario and BeforeCleanup: the suite's on tgt, or,
// with concurrent scenarios on the sandbox, on a kintone emulator of each scenario's own
// (iso, nil otherwise).
func (s *session) scenarioHooks(tgt *target.Target, suite *steps.Suite, rsec *runSecrets) (before func(context.Context, *scenario.State) error, attempts func(context.Context, *scenario.State), iso *isolation.Isolation) {
	if s.concurrency() <= 1 || s.bin == "" {
		return suite.BeforeScenario, s.readAttempts(tgt), nil
	}
	iso = isolation.New(isolation.Options{Bin: s.bin, Profile: tgt.Profile, Latency: sandboxLatency(s.flags.readLatency),
		Run: tgt, Secrets: rsec, Prepare: prepareOn(suite)})
	attempts = func(ctx context.Context, st *scenario.State) {
		if t := iso.Target(st); t != nil {
			s.readAttempts(t)(ctx, st)
		}
	}
	return iso.BeforeScenario, attempts, iso
}

// runRecord is run.json's skeleton of a run on tgt: runner, target, SUT, product, platform,
// selection and environment; the runner fills in the scenarios and totals.
func (s *session) runRecord(tgt *target.Target) *results.Run {
	f := s.flags
	run := &results.Run{
		RunnerVersion: Version, Flowtest: build(), FeaturesDigest: s.featuresDigest, Target: tgt.Name, Profile: tgt.Profile,
		SUT: results.SUTIdentity{Commit: f.sutCommit, Versions: tgt.Versions}, Product: productRecord(tgt),
		OS: runtime.GOOS + "/" + runtime.GOARCH, TagExpression: f.tags,
		Environment: tgt.Describe(), Start: time.Now().UTC(), Command: s.extras.command,
	}
	if f.sutCommit != "" {
		run.SUT.CommitSource = "flag"
	}
	if s.budget != nil {
		run.APIBudget = s.budget.Record()
	}
	if f.shard != "" {
		run.Environment["shard"] = f.shard
	}
	if conc := s.concurrency(); conc > 1 {
		run.Environment["concurrency"] = fmt.Sprint(conc)
	}
	if s.bin != "" {
		// Which sandbox ran: `flowtest defects --control-from` accepts this archive as its
		// control only for the correct sandbox of the checkout it builds from.
		if sum, err := results.FileSHA256(s.bin); err == nil {
			run.Environment[defects.SandboxDigestKey] = sum
		}
	}
	return run
}

// outputsClean checks what the run wrote, the archive and the --format files, for the
// secrets and raw app ids it knows (the sandbox's tokens exist only now) and the archive for
// integrity, printing each problem, before the run says anything passed.
func outputsClean(stdout io.Writer, tgt *target.Target, dir string, res runner.Result, secrets map[string]string) bool {
	var appIDs []string
	for id := range tgt.AppRoles() {
		appIDs = append(appIDs, id)
	}
	switch {
	case !leakFree(stdout, dir, secrets, appIDs):
		return false
	case !filesLeakFree(stdout, res.FormatFiles, secrets, appIDs):
		return false
	case !archiveWhole(stdout, dir) && res.Code != runner.ExitInterrupted:
		return false
	}
	return true
}

// prepareOn prepares a scenario's scene on its own emulator: the steps' BeforeScenario on
// a copy of suite pointing at it.
func prepareOn(suite *steps.Suite) func(ctx context.Context, st *scenario.State, t *target.Target) error {
	return func(ctx context.Context, st *scenario.State, t *target.Target) error {
		own := *suite
		own.Target = t
		own.Cleaner = newCleaner(t)
		return own.BeforeScenario(ctx, st)
	}
}

// defaultStepTimeout is the deadline of a step when --step-timeout is not given.
const defaultStepTimeout = 5 * time.Minute

// stepDeadline is the deadline of every step: --step-timeout as given, else the default
// stretched by the timeout scale, so that a scaled wait is not cut short by its own step.
func stepDeadline(flag time.Duration, scale float64) time.Duration {
	if flag != 0 {
		return flag
	}
	if scale <= 0 {
		scale = 1
	}
	return time.Duration(float64(defaultStepTimeout) * scale)
}

// checkInvariants is the runner's Verify of `flowtest run`: the contract's invariants over
// the scenario's writes and final records, less its manifest exemptions.
func checkInvariants(ctx context.Context, st *scenario.State, e runner.Entry) error {
	return steps.CheckInvariants(ctx, st, e.InvariantExemptions)
}

// staleExemptions are the run's invariant exemptions that were not needed (the invariant
// held), one line each. A warning, not a failure: a race may meet its exempted violation in
// one run and miss it in the next.
func staleExemptions(recs []*results.Scenario) []string {
	var out []string
	for _, r := range recs {
		if r == nil {
			continue
		}
		for _, n := range r.Notes {
			if n.What == steps.ExemptionStaleNote {
				out = append(out, fmt.Sprintf("scenario %s: stale invariant exemption in features/manifest.yaml: %s", r.ID, n.Detail))
			}
		}
	}
	return out
}
