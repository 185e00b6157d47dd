package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/harness/config"
	"github.com/ksqlflow/flowtest/harness/runlock"
	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/scope"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/harness/workdir"
	"github.com/ksqlflow/flowtest/internal/defects"
	"github.com/ksqlflow/flowtest/results"
	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/safety"
	"github.com/ksqlflow/flowtest/steps"
)

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// runFlags are the flags of `flowtest run` and `flowtest check`.
type runFlags struct {
	common
	out          string
	dryRun       bool
	stepTimeout  time.Duration
	formats      multiFlag
	sutCommit    string
	keepWorkDirs bool
	allowEmpty   bool
	repeat       int
	readLatency  time.Duration      // sandbox: delay of every business-app request
	shard        string             // K/N
	durationsDir string             // --durations-from
	config       map[string]*string // configuration flags handed to harness/config
	uses         map[string]flagUse // the flags the user gave, with their raw values
}

var configFlags = []struct{ name, usage string }{
	{"profile", "FlowNet / kSQL-Flow profile (default e2e; prod is refused)"},
	{"base-url", "kintone base URL of a live tenant (https only)"},
	{"concurrency", "scenarios at once, an integer of at least 1 (live mode refuses anything but 1)"},
	{"flownet-dir", "kSQL-FlowNet checkout (live: the CLI is node <dir>/dist/cli/index.js)"},
	{"denylist-file", "operator-maintained production deny list"},
	{"lock-dir", "where the exclusive run lock lives"},
	{"ca-file", "extra PEM CA bundle to trust for the live tenant"},
	{"timeout-scale", "multiply every named wait limit of the steps (positive decimal, default 1; e.g. 3 for a slow live tenant)"},
}

func (f *runFlags) bind(fs *flag.FlagSet, withRun bool) {
	f.common.bind(fs)
	f.config = map[string]*string{}
	for _, cf := range configFlags {
		f.config[cf.name] = fs.String(cf.name, "", cf.usage)
	}
	fs.BoolVar(&f.allowEmpty, "allow-empty", false, "accept a selection that selects no scenario (refused otherwise)")
	if withRun {
		fs.StringVar(&f.out, "out", "test-results", "results archive root: <out>/<YYYY-MM-DD>/<HHMMSS>-<label>/")
		fs.BoolVar(&f.dryRun, "dry-run", false, "preflight and the ordered list of what would run, with reasons; nothing starts")
		fs.DurationVar(&f.stepTimeout, "step-timeout", 0, "deadline of every step, a positive duration (default 5m, times FLOWTEST_TIMEOUT_SCALE)")
		fs.Var(&f.formats, "format", "extra godog formatter (repeatable), e.g. pretty or junit:out.xml (one file per scenario)")
		fs.StringVar(&f.sutCommit, "sut-commit", "", "commit of the system under test, for the acceptance record")
		fs.BoolVar(&f.keepWorkDirs, "keep-workdirs", false, "keep scenario work dirs (unredacted logs) after the run")
		fs.StringVar(&f.shard, "shard", "", "K/N: run only shard K of a deterministic split of the selection into N shards (merge the shards' archives with `flowtest archive merge`)")
		fs.StringVar(&f.durationsDir, "durations-from", "", "archive of an earlier run whose scenario durations balance --shard and give the progress line its ETA")
		fs.DurationVar(&f.readLatency, "sandbox-read-latency", 500*time.Millisecond, "sandbox: delay of every request to the business apps (0 = a fast tenant; held windows make every scenario independent of it)")
		fs.IntVar(&f.repeat, "repeat", 1, "run the selection this many times (new scopes, a new archive each time) and report per scenario how many runs passed; exit 1 if one flaked")
	}
}

func (f *runFlags) configFlags() map[string]string {
	out := map[string]string{}
	for k, v := range f.config {
		if *v != "" {
			out[k] = *v
		}
	}
	return out
}

// preparation is what preflight makes for the selected scenarios: their scopes, every
// identifier they will use and their rendered fixtures.
type preparation struct {
	scopes   map[string]*scope.Scope
	idents   []safety.Identifier
	fixtures []safety.Fixture
	selected []string
}

// scopeIDs are the prepared scopes, sorted.
func (p *preparation) scopeIDs() []string {
	out := make([]string, 0, len(p.scopes))
	for _, sc := range p.scopes {
		out = append(out, sc.ID())
	}
	sort.Strings(out)
	return out
}

// prepare makes each selected scenario's scope and renders the fixtures its steps name, so
// that the safety checks see exactly what the scenarios will use. Which identifiers beyond the
// base ones a scenario will use follows its declared needs (the manifest). Nothing is started.
// confirmer is the named confirmer ("" when the scope's principal confirms).
func prepare(items []runner.Item, fixturesDir, profile, dir, confirmer string) (*preparation, error) {
	p := &preparation{scopes: map[string]*scope.Scope{}, selected: []string{}}
	for _, it := range items {
		if !it.Run {
			continue
		}
		p.selected = append(p.selected, it.ID)
		sc, err := scope.New(it.ID, time.Now(), nil)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: scope: %w", it.ID, err)
		}
		p.scopes[it.ID] = sc
		add := func(kind safety.IdentKind, v string) {
			p.idents = append(p.idents, safety.Identifier{Scenario: it.ID, Kind: kind, Value: v})
		}
		add(safety.IdentScope, sc.ID())
		add(safety.IdentOther, sc.BusinessKey())
		add(safety.IdentRequester, sc.Principal("requester"))
		add(safety.IdentServicePrincipal, sc.Principal("service"))
		if it.Needs.Has(runner.NeedRequestApp) { // only request scenarios run pollers
			add(safety.IdentPollerHost, sc.Host())
		}
		if it.Needs.Has(runner.NeedConfirmer) && confirmer == "" { // the scope's principal confirms
			add(safety.IdentOther, sc.Principal("confirmer"))
		}
		networks, sqls := steps.FixturesOf(it.Feature.StepText)
		for _, n := range networks {
			r, err := sc.Render(filepath.Join(fixturesDir, "networks", n), filepath.Join(dir, it.ID, strings.TrimSuffix(n, ".yaml")), scope.RenderOptions{})
			if err != nil {
				return nil, fmt.Errorf("scenario %s: fixture %s: %w", it.ID, n, err)
			}
			add(safety.IdentNetworkID, r.NetworkID)
			for _, node := range r.Nodes {
				add(safety.IdentNodeID, node.ID)
				add(safety.IdentJobID, node.JobID)
			}
			for _, file := range r.Files {
				data, err := os.ReadFile(file)
				if err != nil {
					return nil, fmt.Errorf("scenario %s: read rendered %s: %w", it.ID, file, err)
				}
				fx := safety.Fixture{Scenario: it.ID, Path: file, Content: data}
				switch {
				case file == r.Path:
					fx.Kind, fx.Name = safety.FixtureNetwork, n
					for _, node := range r.Nodes {
						fx.JobIDs = append(fx.JobIDs, node.FixtureJobID)
					}
				case strings.HasSuffix(file, ".sql"):
					fx.Kind = safety.FixtureSQL
				default:
					continue
				}
				p.fixtures = append(p.fixtures, fx)
			}
		}
		for _, s := range sqls {
			src := filepath.Join(fixturesDir, "jobs", s)
			data, err := os.ReadFile(src)
			if err != nil {
				return nil, fmt.Errorf("scenario %s: fixture SQL %s: %w", it.ID, s, err)
			}
			p.fixtures = append(p.fixtures, safety.Fixture{Scenario: it.ID, Kind: safety.FixtureSQL, Path: src, Content: data})
		}
		for _, id := range sc.Identifiers() {
			if !hasIdent(p.idents, it.ID, id) {
				add(safety.IdentOther, id)
			}
		}
	}
	return p, nil
}

func hasIdent(list []safety.Identifier, scenario, v string) bool {
	for _, i := range list {
		if i.Scenario == scenario && i.Value == v {
			return true
		}
	}
	return false
}

// needing lists, in run order, the selected scenarios whose manifest entry declares need.
func needing(items []runner.Item, need runner.Need) []string {
	var ids []string
	for _, it := range items {
		if it.Run && it.Needs.Has(need) {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// safetyNeeds hands the selected scenarios' declared needs to the safety layer (which imports
// nothing of ours, so it gets booleans, not need names).
func safetyNeeds(items []runner.Item) map[string]safety.Needs {
	out := map[string]safety.Needs{}
	for _, it := range items {
		if it.Run {
			out[it.ID] = safety.Needs{RequestApp: it.Needs.Has(runner.NeedRequestApp), CSV: it.Needs.Has(runner.NeedCSVIO)}
		}
	}
	return out
}

// confirmerCheck is the preflight rule of the confirmer need: a selected scenario that kills a
// kSQL-Flow child and force-unlocks its job lock needs, in live mode, a named confirmer
// (--confirmed-by or M5_FORCE_UNLOCK_CONFIRMED_BY) before anything starts.
func confirmerCheck(target safety.Target, items []runner.Item, confirmer string) safety.Check {
	c := safety.Check{Name: "kill-confirmer", Subject: "--confirmed-by", OK: true, Reason: "no selected scenario needs a confirmer"}
	ids := needing(items, runner.NeedConfirmer)
	switch {
	case len(ids) == 0:
	case confirmer != "":
		c.Reason = "force-unlock cleanups confirmed by " + confirmer
	case target == safety.TargetLive:
		c.OK, c.Reason = false, "live scenarios needing a confirmer ("+strings.Join(ids, ", ")+") need a named confirmer: --confirmed-by or M5_FORCE_UNLOCK_CONFIRMED_BY"
	default:
		c.Reason = "sandbox: the scope's principal confirms"
	}
	return c
}

// ioDirCheck is the preflight rule of the csv-io need (scenarios.md §3.4): in live mode the
// per-scope CSV IO roots are made under KSQL_FLOWNET_IO_DIR, which must be an existing
// absolute directory. stat is os.Stat (injected for tests).
func ioDirCheck(target safety.Target, items []runner.Item, dir string, stat func(string) (os.FileInfo, error)) safety.Check {
	c := safety.Check{Name: "csv-io-dir", Subject: config.VarIODir, OK: true, Reason: "no selected scenario needs csv-io"}
	ids := needing(items, runner.NeedCSVIO)
	who := "csv-io scenarios (" + strings.Join(ids, ", ") + ")"
	switch {
	case len(ids) == 0:
	case target != safety.TargetLive:
		c.Reason = "sandbox: not checked (a live setting)"
	case strings.TrimSpace(dir) == "":
		c.OK, c.Reason = false, who+" need it: an existing absolute directory for the per-scope IO roots"
	case !filepath.IsAbs(dir):
		c.OK, c.Reason = false, fmt.Sprintf("%q is not an absolute path (%s need an existing absolute directory)", dir, who)
	default:
		st, err := stat(dir)
		switch {
		case err != nil:
			c.OK, c.Reason = false, fmt.Sprintf("%s need an existing directory: %v", who, err)
		case !st.IsDir():
			c.OK, c.Reason = false, fmt.Sprintf("%q is not a directory (%s need one)", dir, who)
		default:
			c.Reason = fmt.Sprintf("%s for %s", dir, who)
		}
	}
	return c
}

// session is everything a run or check resolved before the gate.
type session struct {
	flags   runFlags
	items   []runner.Item
	fsys    fs.FS
	cfg     *config.Config
	prep    *preparation
	in      safety.Input
	workDir string         // run-level work dir (rendered preflight fixtures, sandbox emulator)
	work    *workdir.Dir   // its owner record (pid, start, scopes)
	bin     string         // the flowsandbox binary (sandbox only): concurrent scenarios start their own emulator
	extras  runExtras      // what `flowtest gate run` adds (gate.go); the command line for run.json
	setup   []safety.Check // live setup checks (livesetup.go), run once per session
	// durations are those of --durations-from (shard balance, ETA); tty is the console when
	// it is a terminal (the progress line is redrawn in place), else nil.
	durations map[string]time.Duration
	tty       *os.File
}

func openSession(f runFlags) (*session, error) {
	items, fsys, expr, err := f.plan()
	if err != nil {
		return nil, err
	}
	if err := runner.CheckSelection(items, f.tags, expr, f.rerun, f.allowEmpty); err != nil {
		return nil, refuse("%v", err)
	}
	var durations map[string]time.Duration
	if f.durationsDir != "" {
		if durations, err = runner.DurationsOf(f.durationsDir); err != nil {
			return nil, refuse("--durations-from %q: %v", f.durationsDir, err)
		}
	}
	if f.shard != "" {
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
	return &session{flags: f, items: items, fsys: fsys, cfg: cfg, prep: prep, in: in, workDir: work, work: wd, durations: durations}, nil
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
	return []safety.Check{
		confirmerCheck(s.in.Target, s.items, s.flags.confirmedBy),
		ioDirCheck(s.in.Target, s.items, s.cfg.Get(config.VarIODir), os.Stat),
		csvAppCheck(s.in.Target, s.items, s.cfg.FlowConfig(), s.cfg.Profile(), s.cfg.Get(safety.VarAppCSV), os.ReadFile),
	}
}

// staticReport is the safety preflight plus flowtest's own need rules and, live and only
// when those pass, the setup checks (tenant TLS, launchers, kSQL-Flow config).
func (s *session) staticReport() safety.Report {
	rep := safety.Preflight(s.in)
	rep.Checks = append(rep.Checks, s.needChecks()...)
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
		s.setup = liveSetupChecks(s.cfg)
	}
	return s.setup
}

// startCommand parses the flags of run or check and opens the session; a non-zero code
// means the command is refused (and the message printed).
func startCommand(name string, args []string, withRun bool, stderr io.Writer) (*session, int) {
	fset := flag.NewFlagSet(name, flag.ContinueOnError)
	var f runFlags
	f.bind(fset, withRun)
	uses, code, ok := parseFlags(fset, name, args, stderr, "format")
	if !ok {
		return nil, code
	}
	f.uses = uses
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "flowtest %s: unexpected arguments %q (select scenarios with --tags)\n", name, fset.Args())
		return nil, runner.ExitRefused
	}
	// Every flag value before anything else: nothing is read or started on a bad one.
	if err := f.validate(uses, withRun); err != nil {
		return nil, exitFor(stderr, name, err)
	}
	s, err := openSession(f)
	if err != nil {
		return nil, exitFor(stderr, name, err)
	}
	return s, 0
}

func cmdRun(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	return runCommand("run", args, stdout, stderr, sigs, runExtras{command: append([]string{"flowtest", "run"}, args...)})
}

// runCommand is the run path of `flowtest run` and of `flowtest gate run`, which passes the
// gate record to complete in extras.
func runCommand(name string, args []string, stdout, stderr io.Writer, sigs <-chan os.Signal, extras runExtras) int {
	s, code := startCommand(name, args, true, stderr)
	if s == nil {
		return code
	}
	s.extras = extras
	defer s.close()
	s.tty = terminalOf(stdout) // before the redactor hides the file behind a writer
	red := s.consoleRedactor()
	stdout, stderr = redactConsole(stdout, red), redactConsole(stderr, red)
	f := s.flags
	var err error
	if _, given := f.uses["lock-dir"]; !given { // the flag was checked with the others
		if err := creatableDir(config.VarLockDir, s.cfg.LockDir()); err != nil {
			return exitFor(stderr, "run", err)
		}
	}

	static := s.staticReport()
	if f.dryRun {
		fmt.Fprintln(stdout, "Preflight:")
		safety.FormatReport(stdout, static)
		fmt.Fprintln(stdout, "\nRun order:")
		runner.WritePlan(stdout, s.items)
		if !static.OK() {
			return runner.ExitRefused
		}
		// The dry run exits as the run would before its first scenario: nothing would run.
		if code := runner.PlanCode(s.items); code != runner.ExitPassed {
			fmt.Fprintf(stdout, "nothing would run: every selected scenario is not implemented or needs another platform (exit %d)\n", code)
			return code
		}
		return runner.ExitPassed
	}
	if !static.OK() {
		fmt.Fprintln(stderr, "flowtest run: refused by preflight; nothing was started:")
		safety.FormatViolations(stderr, static)
		return runner.ExitRefused
	}
	var bin string
	if s.in.Target == safety.TargetSandbox {
		if bin, err = target.FindSandboxBinary(f.sandboxBin); err != nil {
			fmt.Fprintf(stderr, "flowtest run: %v\n", err)
			return runner.ExitRefused
		}
		s.bin = bin
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tgt *target.Target
	defer func() {
		if tgt != nil {
			if err := tgt.Close(); err != nil {
				fmt.Fprintf(stderr, "flowtest run: %v\n", err)
			}
		}
	}()
	code = runner.ExitPassed
	plan := safety.Plan{
		Start: func(ctx context.Context, in safety.Input) error {
			if tgt == nil { // live: resolved from configuration
				t, err := liveTarget(s.cfg)
				if err != nil {
					return err
				}
				tgt = t
			}
			// Serial execution is a safety rule: one runner per environment.
			var ids []string
			for id := range tgt.AppRoles() {
				ids = append(ids, id)
			}
			lock, err := runlock.Acquire(runlock.Options{
				Dir: s.cfg.LockDir(), BaseURL: tgt.BaseURL, AppIDs: ids,
				Warn: func(msg string) { fmt.Fprintf(stderr, "flowtest run: warning: %s\n", msg) },
			})
			if err != nil {
				return refuse("%v", err)
			}
			defer lock.Release()
			code = s.execute(ctx, tgt, stdout, sigs)
			return nil
		},
	}
	if s.in.Target == safety.TargetSandbox {
		plan.Resolve = func(ctx context.Context) (safety.Resolved, error) {
			t, err := target.StartSandbox(ctx, target.SandboxOptions{
				Bin: bin, WorkDir: filepath.Join(s.workDir, "sandbox"), Profile: s.cfg.Profile(),
				Latency: sandboxLatency(s.flags.readLatency), Log: stdout,
			})
			if err != nil {
				return safety.Resolved{}, err
			}
			tgt = t
			return resolvedOf(t), nil
		}
	} else {
		reader, err := pendingReader(s.cfg)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest run: %v\n", err)
			return runner.ExitRefused
		}
		plan.Pending = reader
	}
	rep, err := safety.Gate(ctx, s.in, plan)
	if err != nil {
		if errors.Is(err, safety.ErrRefused) {
			fmt.Fprintln(stderr, "flowtest run: refused by preflight; no scenario was started:")
			safety.FormatViolations(stderr, rep)
		} else {
			fmt.Fprintf(stderr, "flowtest run: %v\n", err)
		}
		return runner.ExitRefused
	}
	return code
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

// sandboxLatency makes the business apps answer like kintone (by default about half a second
// per read, which gives the long-read fixtures their documented durations, job-longread.sql).
// No scenario depends on it: windows a scenario needs are held by barriers (steps/windows.go).
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
func (s *session) execute(ctx context.Context, tgt *target.Target, stdout io.Writer, sigs <-chan os.Signal) int {
	if s.flags.repeat > 1 {
		return s.repeatRuns(ctx, tgt, stdout, sigs)
	}
	code, _ := s.executeOnce(ctx, tgt, stdout, sigs, s.runLabel())
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
func (s *session) executeOnce(ctx context.Context, tgt *target.Target, stdout io.Writer, sigs <-chan os.Signal, label string) (int, runner.Result) {
	f := s.flags
	secrets := results.SecretsFromEnv(envMap(os.Environ()))
	for k, v := range s.cfg.Secrets() {
		secrets[k] = v
	}
	for k, v := range tgt.Secrets() {
		secrets[k] = v
	}
	red := results.NewRedactor(secrets, tgt.AppRoles())
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
	fixtures, _ := filepath.Abs(filepath.Join(f.features, "fixtures"))
	archAbs, _ := filepath.Abs(arch.Dir())
	rsec := &runSecrets{red: red, secrets: secrets}
	self, _ := os.Executable() // the CSV steps' kSQL-Flow wrapper; if unknown, those steps say so
	suite := &steps.Suite{
		Target: tgt, FixturesDir: fixtures, ConfirmedBy: f.confirmedBy,
		Scopes: s.prep.scopes, ArchiveDir: archAbs, Log: stdout, IODir: s.cfg.Get(config.VarIODir),
		Cleaner: newCleaner(tgt), CheckIdentifiers: s.checkLaterIdentifiers,
		CheckFixture: s.checkLaterFixture,
		Redact:       rsec, FlowtestBin: self,
	}
	conc := s.concurrency()
	before, attempts := suite.BeforeScenario, s.readAttempts(tgt)
	var iso *isolation
	if conc > 1 && s.bin != "" {
		iso = newIsolation(s.bin, tgt.Profile, suite, rsec, tgt)
		iso.latency = sandboxLatency(s.flags.readLatency)
		before = iso.beforeScenario
		attempts = func(ctx context.Context, st *scenario.State) {
			if t := iso.target(st); t != nil {
				s.readAttempts(t)(ctx, st)
			}
		}
		fmt.Fprintf(stdout, "concurrency %d: each scenario on a kintone emulator of its own; its log in its work dir, wait progress here\n", conc)
	}
	work := filepath.Join(s.workDir, "scenarios")
	if err := os.MkdirAll(work, 0o755); err != nil {
		fmt.Fprintf(stdout, "flowtest run: %v\n", err)
		return runner.ExitFailed, runner.Result{}
	}
	run := &results.Run{
		RunnerVersion: Version, Target: tgt.Name, Profile: tgt.Profile,
		SUT: results.SUTIdentity{Commit: f.sutCommit, Versions: tgt.Versions},
		OS:  runtime.GOOS + "/" + runtime.GOARCH, TagExpression: f.tags,
		Environment: tgt.Describe(), Start: time.Now().UTC(), Command: s.extras.command,
	}
	if f.sutCommit != "" {
		run.SUT.CommitSource = "flag"
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
	res := runner.Execute(ctx, runner.Options{
		Features: s.fsys, Items: s.items,
		Initialize: suite.Initialize, BeforeScenario: before, BeforeCleanup: attempts, Concurrency: conc,
		StepTimeout: stepDeadline(f.stepTimeout, s.cfg.TimeoutScale), TimeoutScale: s.cfg.TimeoutScale, WorkRoot: work, KeepWorkDirs: f.keepWorkDirs,
		Formats: f.formats, Archive: arch, Run: run, Progress: stdout, Status: s.status(tgt.Name, arch.Dir()), Signals: sigs,
		// A second interrupt exits at once: the emulator must not outlive the runner.
		Exit: func(code int) {
			if iso != nil {
				iso.abort()
			}
			tgt.Abort()
			os.Exit(code)
		},
	})
	fmt.Fprintf(stdout, "%s — archive %s\n", results.TotalsText(run.Totals), arch.Dir())
	if run.Runner != nil {
		// The closing line: what the run cost the runner itself (run.json has it too).
		defer fmt.Fprintln(stdout, results.CostText(run.Runner))
	}
	// The run knows every secret it used (the sandbox's tokens exist only now), so it checks
	// its own archive for leaks before it says anything passed.
	var appIDs []string
	for id := range tgt.AppRoles() {
		appIDs = append(appIDs, id)
	}
	leaks, err := results.Verify(arch.Dir(), secrets, appIDs)
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "archive verify: %v\n", err)
		return runner.ExitFailed, res
	case len(leaks) > 0:
		for _, l := range leaks {
			fmt.Fprintf(stdout, "archive leak: %s\n", l)
		}
		return runner.ExitFailed, res
	case !archiveWhole(stdout, arch.Dir()) && res.Code != runner.ExitInterrupted:
		return runner.ExitFailed, res
	}
	fmt.Fprintf(stdout, "archive verify: no secret or raw app id in %s\n", arch.Dir())
	if res.Code == runner.ExitNothingRan {
		fmt.Fprintf(stdout, "nothing ran: every selected scenario was not run (not implemented, or needs another platform); exit %d, not green\n", res.Code)
	}
	return res.Code, res
}

// runSecrets hands the steps the run's redactor: a value a scenario registers is redacted in
// every record written after that, and a secret is also among what the run's own archive
// check looks for at the end.
type runSecrets struct {
	red     *results.Redactor
	mu      sync.Mutex
	secrets map[string]string // the map results.Verify reads once every scenario has ended
}

func (r *runSecrets) AddReason(body string) { r.red.AddReason(body) }

func (r *runSecrets) AddSecret(name, value string) {
	r.mu.Lock()
	r.secrets[name] = value
	r.mu.Unlock()
	r.red.AddSecret(name, value)
}

func envMap(env []string) map[string]string {
	out := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
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

// archiveWhole checks the archive this command just wrote the way `archive verify` will
// (results.CheckIntegrity), printing each problem: a run never reports on an archive that
// does not hold together.
func archiveWhole(stdout io.Writer, dir string) bool {
	probs := results.CheckIntegrity(dir)
	for _, p := range probs {
		fmt.Fprintf(stdout, "archive integrity: %s\n", p)
	}
	return len(probs) == 0
}
