package cli

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/app/budget"
	"github.com/ksqlflow/flowtest/internal/app/preflight"
	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/workdir"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
	"github.com/ksqlflow/flowtest/internal/steps"
)

// session is everything a run or check resolved before the gate.
type session struct {
	flags runFlags
	items []runner.Item
	fsys  fs.FS
	// featuresDigest is results.FeaturesDigest of fsys, taken once when the session opens,
	// for run.json: which text of the suite the run read.
	featuresDigest string
	cfg            *config.Config
	prep           *preparation
	in             safety.Input
	workDir        string         // run-level work dir (rendered preflight fixtures, sandbox emulator)
	work           *workdir.Dir   // its owner record (pid, start, scopes)
	bin            string         // the flowsandbox binary (sandbox only): concurrent scenarios start their own emulator
	extras         runExtras      // what `flowtest gate run` adds (gate.go); the command line for run.json
	setup          []safety.Check // live setup checks (internal/app/preflight/livesetup.go), run once per session
	// durations are those of --durations-from (shard balance, ETA); tty is the console when
	// it is a terminal (the progress line is redrawn in place), else nil.
	durations map[string]time.Duration
	tty       *os.File
	// api counts the run's kintone requests (apibudget.go); budget is the live run's budget
	// check (nil on the sandbox), kept for run.json.
	api    *apicount.Counter
	budget *budget.Verdict
	// stop and now are the command's interrupts (invocation): the runner stops the running
	// scenarios on the first and kills their children on the second.
	stop, now context.Context
}

func openSession(f runFlags) (*session, error) {
	items, fsys, expr, err := f.plan()
	if err != nil {
		return nil, err
	}
	digest, err := results.FeaturesDigest(fsys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.features, err)
	}
	if err := runner.CheckSelection(items, f.tags, expr, f.rerun, f.allowEmpty); err != nil {
		return nil, refuse("%v", err)
	}
	// The known product defects are checked against the manifest (every scenario they name
	// exists) and the repository (every evidence file exists) before anything runs.
	if f.knownDefects, err = runner.LoadKnownDefects(f.features, f.manifest); err != nil {
		return nil, refuse("%v", err)
	}
	var durations map[string]time.Duration
	if f.durationsDir != "" {
		if durations, err = runner.DurationsOf(f.durationsDir); err != nil {
			return nil, refuse("--durations-from %q: %v", f.durationsDir, err)
		}
	}
	// --last-failed selects what its archive's shard left: split again, it would land elsewhere.
	if f.shard != "" && f.lastFailedIDs == nil {
		k, n, _ := runner.ParseShard(f.shard) // checked with the other flags
		items = runner.Shard(items, k, n, durations)
		if runner.Count(items).Selected == 0 && !f.allowEmpty {
			return nil, refuse("--shard %s: this shard got no scenario of the selection (fewer selected scenarios than shards); --allow-empty accepts that", f.shard)
		}
	}
	_, envNamed := f.uses["env-file"]
	cfg, err := config.Load(config.Options{Target: f.target, EnvFile: f.envFile, EnvFileRequired: envNamed, OSEnv: os.Environ(), Flags: f.configFlags()})
	if err != nil {
		return nil, refuse("configuration: %v", err)
	}
	// A runner killed before its cleanup left its work dir (unredacted logs and configs):
	// the next run removes those whose owner is proven gone, and says so.
	if rep, err := workdir.RemoveDead(""); err != nil {
		fmt.Fprintf(os.Stderr, "flowtest: looking for work dirs of dead runs: %v\n", err)
	} else if line := rep.Line(); line != "" {
		fmt.Fprintln(os.Stderr, line)
	}
	wd, err := workdir.Create("", f.keepWorkDirs)
	if err != nil {
		return nil, err
	}
	work := wd.Path()
	fixtures, err := filepath.Abs(filepath.Join(f.features, "fixtures"))
	if err != nil {
		return nil, err
	}
	if f.confirmedBy == "" {
		f.confirmedBy = cfg.Get(config.VarConfirmedBy)
	}
	prep, err := prepare(items, fixtures, cfg.Profile(), filepath.Join(work, "preflight"), f.confirmedBy)
	if err != nil {
		os.RemoveAll(work)
		return nil, refuse("preflight: %v", err)
	}
	if err := wd.AddScopes(prep.scopeIDs()...); err != nil { // `flowtest sweep` leaves them alone
		os.RemoveAll(work)
		return nil, err
	}
	in := cfg.SafetyInput(prep.idents, prep.fixtures)
	in.Scenarios = prep.selected
	in.ScenarioNeeds = safetyNeeds(items)
	s := &session{flags: f, items: items, fsys: fsys, featuresDigest: digest, cfg: cfg, prep: prep, in: in, workDir: work, work: wd, durations: durations, api: apicount.New()}
	// The preflight (check's PASS line too) judges the concurrency the run will use: on the
	// sandbox the default when none is configured, not the configuration's 1.
	s.in.Concurrency, s.in.ConcurrencyFrom = s.concurrencyFrom()
	return s, nil
}

// close removes the run-level work dir (rendered preflight fixtures, the emulator's data and
// logs, unredacted) unless --keep-workdirs asked to keep it for inspection.
func (s *session) close() {
	if s.flags.keepWorkDirs {
		fmt.Fprintf(os.Stderr, "flowtest: kept the run work dir (unredacted) at %s\n", s.workDir)
		return
	}
	os.RemoveAll(s.workDir)
}

// needChecks are flowtest's own preflight rules for the selected scenarios' declared needs
// (the request-app and csv-io apps and tokens are checked inside safety, from
// Input.ScenarioNeeds).
func (s *session) needChecks() []safety.Check {
	checks := []safety.Check{
		preflight.ConfirmerCheck(s.in.Target, s.items, s.flags.confirmedBy),
		preflight.IODirCheck(s.in.Target, s.items, s.cfg.Get(config.VarIODir), os.Stat),
		preflight.CSVAppCheck(s.in.Target, s.items, s.cfg.FlowConfig(), s.cfg.Profile(), s.cfg.Get(safety.VarAppCSV), preflight.LiveDescriber(s.cfg)),
	}
	// Every step of the selection matches one definition, on every target, before the first
	// scenario starts (what `flowtest steps` finds from the same library).
	defs, err := stepLibrary()
	return append(checks, preflight.StepsDefined(defs, err, s.items)...)
}

// staticReport is the safety preflight plus flowtest's own need rules and, live and only
// when those pass, the setup checks (tenant TLS, launchers, kSQL-Flow config).
func (s *session) staticReport() safety.Report {
	rep := safety.Preflight(s.in)
	rep.Checks = append(rep.Checks, s.needChecks()...)
	rep.Checks = append(rep.Checks, s.budgetChecks()...)
	// The setup probes start the launchers and send one request: only once every safety
	// rule passed (a refused run starts nothing and sends nothing).
	if rep.OK() {
		rep.Checks = append(rep.Checks, s.setupChecks()...)
	}
	return rep
}

// setupChecks are the live setup checks, run once per session (they start the launchers and
// send one request to the tenant); none on the sandbox.
func (s *session) setupChecks() []safety.Check {
	if s.in.Target != safety.TargetLive {
		return nil
	}
	if s.setup == nil {
		s.setup = preflight.LiveSetupChecks(s.cfg, s.api)
	}
	return s.setup
}

// startCommand checks the flags of run or check (f, given as inv.uses) and its arguments
// (none) and opens the session; a non-zero code means the command is refused (and the
// message printed).
func startCommand(f *runFlags, inv invocation, args []string, withRun bool) (*session, int) {
	name, stderr := inv.name, inv.stderr
	f.uses = inv.uses
	if unexpectedArgs(inv, args, selectWithTags) {
		return nil, runner.ExitRefused
	}
	// Every flag value before anything else: nothing is read or started on a bad one.
	if err := f.validate(f.uses, withRun); err != nil {
		return nil, exitFor(stderr, name, err)
	}
	if f.lastFailed {
		if err := f.resolveLastFailed(); err != nil {
			return nil, exitFor(stderr, name, err)
		}
		fmt.Fprintf(stderr, "flowtest %s: --last-failed: %d scenario(s) that failed or did not run in %s\n", name, len(f.lastFailedIDs), f.lastFailedFrom)
	}
	s, err := openSession(*f)
	if err != nil {
		return nil, exitFor(stderr, name, err)
	}
	return s, 0
}

// checkLaterIdentifiers applies the preflight's identifier rules, with the same profile and
// deny list, to identifiers a scenario makes after preflight (a lock-conflict trial's
// sub-scope).
func (s *session) checkLaterIdentifiers(ids []safety.Identifier) error {
	return violations("identifiers", safety.CheckIdentifiers(s.in, ids))
}

// checkLaterFixture applies the preflight's fixture rules to a fixture changed after preflight.
func (s *session) checkLaterFixture(f safety.Fixture) error {
	return violations("fixture", safety.CheckFixtures(s.in, []safety.Fixture{f}))
}

func violations(what string, rep safety.Report) error {
	var bad []string
	for _, c := range rep.Violations() {
		bad = append(bad, fmt.Sprintf("%s %s: %s", c.Name, c.Subject, c.Reason))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s refused by the preflight rules: %s", what, strings.Join(bad, "; "))
	}
	return nil
}

// stepLibrary registers the real step library on a recording registry: no godog suite, no
// scenario context (Initialize must not touch it when the registry only records).
func stepLibrary() (defs []stepdef.Def, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("building the step library panicked (does Initialize use the scenario context directly?): %v", p)
		}
	}()
	idx := &stepdef.Index{}
	(&steps.Suite{}).Initialize(nil, stepdef.Registry{Index: idx})
	return idx.Defs(), nil
}

// runExtras is what `flowtest gate run` adds to the run path: the gate record the archive
// completes and writes, the archive label, and the command line for run.json.
type runExtras struct {
	gate    *results.GateRecord
	label   string
	command []string
	explore *exploreSpec // `flowtest explore` (explore.go): an exploration instead of one run
}

// archiveLabel is the archive folder's label: "gate-<name>" for a gate run, else the tags.
func (s *session) archiveLabel() string {
	if s.extras.label != "" {
		return s.extras.label
	}
	return label(s.flags.tags)
}
