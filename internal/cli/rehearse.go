package cli

// flowtest rehearse: the live path rehearsed end to end without a tenant. Each stand-alone
// kintone emulator (`flowsandbox kintone serve --operator-env DIR`) writes an operator's live
// setup for itself (README "Live mode": .env, tokens.sh, the kSQL-Flow config, a deny list);
// then `flowtest run --target live` runs as a child process of its own binary, in DIR, with
// only the platform variables and tokens.sh's exports as its OS environment — exactly what an
// operator types for a release gate, with the reference CLIs as launchers. --shards N starts N
// tenants, one serial live run each over --shard i/N, at once: each tenant is isolated, so
// live mode's one-runner-per-tenant rule holds.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/harness/proc"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/harness/wait"
	"github.com/ksqlflow/flowtest/harness/workdir"
	"github.com/ksqlflow/flowtest/internal/excerpt"
	"github.com/ksqlflow/flowtest/results"
	"github.com/ksqlflow/flowtest/runner"
)

// rehearseFlags are the flags of `flowtest rehearse`.
type rehearseFlags struct {
	latency       time.Duration
	shards        int
	tags          string
	features      string
	out           string
	sandboxBin    string
	confirmedBy   string
	durationsFrom string
	stepTimeout   string
	timeoutScale  string
	allowEmpty    bool
	keepWorkDirs  bool
}

// tenant is one stand-alone emulator and the live run against it.
type tenant struct {
	i, n    int
	name    string // console prefix: speed and i/n
	work    string // operator env, lock dir, process logs (unredacted: removed at the end)
	opDir   string
	outDir  string // the live run's --out
	baseURL string
	emu     *proc.Process
	// emuStderr is the emulator's stderr log, where its daily-limit warnings go.
	emuStderr string
	run       *proc.Process
	result    proc.Result
	wall      time.Duration
}

// tenantOutcome is what one tenant's live run came to, read from its archive.
type tenantOutcome struct {
	Tenant   string   `json:"tenant"`
	Shard    string   `json:"shard,omitempty"`
	BaseURL  string   `json:"base_url"`
	Archive  string   `json:"archive,omitempty"`
	ExitCode int      `json:"exit_code"`
	Passed   int      `json:"passed"`
	Failed   int      `json:"failed"`  // failed, blocked or interrupted
	NotRun   int      `json:"not_run"` // selected for this tenant, not run (other than for its platform)
	Allowed  []string `json:"not_run_allowed,omitempty"`
	Problems []string `json:"problems,omitempty"`
	WallMS   int64    `json:"wall_ms"`
	// APIRequests are the live run's kintone requests per app (its run.json's).
	APIRequests results.APIRequests `json:"api_requests,omitempty"`
}

// rehearsal is the combined report (also rehearsal.json beside the tenants' archives).
type rehearsal struct {
	Latency string          `json:"business_read_latency"`
	Tags    string          `json:"tag_expression"`
	Tenants []tenantOutcome `json:"tenants"`
	WallMS  int64           `json:"wall_ms"`
	Verdict string          `json:"verdict"` // PASS | FAIL
}

func cmdRehearse(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	started := time.Now()
	fset := flag.NewFlagSet("rehearse", flag.ContinueOnError)
	var f rehearseFlags
	fset.DurationVar(&f.latency, "latency", 0, "business-read latency of the stand-alone tenants (customers and deals apps): 0 = a fast tenant, e.g. 500ms = a slow one")
	fset.IntVar(&f.shards, "shards", 1, "stand-alone tenants, one serial live run each over --shard i/N, all at once")
	fset.StringVar(&f.tags, "tags", "", "Cucumber tag expression selecting scenarios (forwarded to each live run)")
	fset.StringVar(&f.features, "features", "features", "directory of feature files and the run-order manifest")
	fset.StringVar(&f.out, "out", "test-results", "archive root: <out>/<YYYY-MM-DD>/<HHMMSS>-rehearsal-<speed>-<label>/tenant-<i>/ holds each tenant's archive")
	fset.StringVar(&f.sandboxBin, "sandbox-bin", "", "path of the flowsandbox binary (default: beside flowtest, else on PATH)")
	fset.StringVar(&f.confirmedBy, "confirmed-by", "rehearsal", "confirmer of force-unlock cleanups, forwarded to each live run")
	fset.StringVar(&f.durationsFrom, "durations-from", "", "archive of an earlier run whose scenario durations balance the shards")
	fset.StringVar(&f.stepTimeout, "step-timeout", "", "forwarded to each live run")
	fset.StringVar(&f.timeoutScale, "timeout-scale", "", "forwarded to each live run")
	fset.BoolVar(&f.allowEmpty, "allow-empty", false, "accept a selection that selects no scenario")
	fset.BoolVar(&f.keepWorkDirs, "keep-workdirs", false, "keep the operator envs (tokens included), emulator logs and the runs' work dirs")
	uses, code, ok := parseFlags(fset, "rehearse", args, stderr)
	if !ok {
		return code
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "flowtest rehearse: unexpected arguments %q (select scenarios with --tags)\n", fset.Args())
		return runner.ExitRefused
	}
	if err := f.validate(uses); err != nil {
		return exitFor(stderr, "rehearse", err)
	}
	// The selection is checked here, once, so a typo is refused before any tenant starts;
	// there are never more tenants than scenarios (a shard without one would be refused).
	c := common{target: "live", tags: f.tags, features: f.features}
	items, _, expr, err := c.plan()
	if err == nil {
		err = runner.CheckSelection(items, f.tags, expr, "", f.allowEmpty)
		if err != nil {
			err = refuse("%v", err)
		}
	}
	if err != nil {
		return exitFor(stderr, "rehearse", err)
	}
	if sel := runner.Count(items).Runnable; sel < f.shards {
		if sel == 0 {
			sel = 1
		}
		fmt.Fprintf(stdout, "rehearse: %d scenarios can run, so %d tenants instead of %d\n", runner.Count(items).Runnable, sel, f.shards)
		f.shards = sel
	}
	sb, err := target.FindSandboxBinary(f.sandboxBin)
	if err != nil {
		return exitFor(stderr, "rehearse", refuse("%v", err))
	}
	self, err := os.Executable()
	if err != nil {
		return exitFor(stderr, "rehearse", fmt.Errorf("find the flowtest binary: %w", err))
	}
	speed := "fast"
	if f.latency > 0 {
		speed = f.latency.String()
	}
	dir, err := results.NewDatedDir(f.out, "rehearsal-"+speed+"-"+label(f.tags), started)
	if err != nil {
		return exitFor(stderr, "rehearse", refuse("--out %q: %v", f.out, err))
	}
	// Owned like a run's work dir, so that a killed rehearsal's (operator envs with tokens)
	// is removed by the next run or rehearsal.
	if rep, err := workdir.RemoveDead(""); err == nil && rep.Line() != "" {
		fmt.Fprintln(stderr, rep.Line())
	}
	wd, err := workdir.CreateAs("", workdir.RehearsePrefix, f.keepWorkDirs)
	if err != nil {
		return exitFor(stderr, "rehearse", err)
	}
	work := wd.Path()
	if f.keepWorkDirs {
		defer fmt.Fprintf(stderr, "flowtest rehearse: kept the operator envs (tokens included) and logs at %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}

	// Signals: the first interrupts the live runs (each writes its archive marked
	// interrupted); the second kills them. Children run in process groups of their own, so a
	// terminal's Ctrl-C reaches them only through here, once.
	interrupted, killed := make(chan struct{}), make(chan struct{})
	stopSignals := make(chan struct{})
	defer close(stopSignals)
	go func() {
		n := 0
		for {
			select {
			case <-sigs:
				n++
				if n == 1 {
					close(interrupted)
				} else {
					close(killed)
					return
				}
			case <-stopSignals:
				return
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-interrupted:
			cancel()
		case <-ctx.Done():
		}
	}()

	fmt.Fprintf(stdout, "rehearse: the live path on %d stand-alone tenant(s), business reads %s; archives under %s\n", f.shards, speedText(f.latency), dir)
	tenants := make([]*tenant, f.shards)
	for i := range tenants {
		t := &tenant{i: i + 1, n: f.shards, name: fmt.Sprintf("%s %d/%d", speed, i+1, f.shards)}
		t.work = filepath.Join(work, fmt.Sprintf("tenant-%d", t.i))
		t.opDir = filepath.Join(t.work, "operator")
		t.outDir = filepath.Join(dir, fmt.Sprintf("tenant-%d", t.i))
		tenants[i] = t
	}
	// The emulators outlive the runs: each is stopped only after every run has ended.
	defer func() {
		for _, t := range tenants {
			if t.emu == nil {
				continue
			}
			select {
			case <-killed:
				t.emu.KillTree()
			default:
				if _, err := t.emu.Stop(10 * time.Second); err != nil {
					fmt.Fprintf(stderr, "flowtest rehearse: stop tenant %s: %v\n", t.name, err)
				}
			}
		}
	}()
	for _, t := range tenants {
		if err := t.startTenant(ctx, sb, f.latency); err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(stderr, "flowtest rehearse: interrupted before any run started")
				return runner.ExitInterrupted
			}
			fmt.Fprintf(stderr, "flowtest rehearse: tenant %s: %v\n", t.name, err)
			return runner.ExitRefused
		}
	}

	out, errOut := &lineWriter{w: stdout}, &lineWriter{w: stderr}
	var relays sync.WaitGroup
	exited := make(chan *tenant, len(tenants))
	for _, t := range tenants {
		if err := t.startRun(ctx, self, f); err != nil {
			fmt.Fprintf(stderr, "flowtest rehearse: tenant %s: %v\n", t.name, err)
			for _, o := range tenants {
				if o.run != nil {
					o.run.KillTree()
				}
			}
			return runner.ExitFailed
		}
		relays.Add(2)
		go func(t *tenant) {
			defer relays.Done()
			relay(t.run.StdoutPath(), "["+t.name+"] ", t.run.Done(), out)
		}(t)
		go func(t *tenant) {
			defer relays.Done()
			relay(t.run.StderrPath(), "["+t.name+"] ", t.run.Done(), errOut)
		}(t)
		go func(t *tenant) {
			<-t.run.Done()
			t.result, _ = t.run.Exited()
			t.wall = t.result.Duration
			exited <- t
		}(t)
	}
	wasInterrupted := false
	intr := interrupted
	for left := len(tenants); left > 0; {
		select {
		case <-exited:
			left--
		case <-intr:
			intr = nil // once
			wasInterrupted = true
			for _, t := range tenants {
				_ = t.run.Signal(proc.Interrupt)
			}
		case <-killed:
			for _, t := range tenants {
				t.run.KillTree()
			}
			fmt.Fprintln(stderr, "flowtest rehearse: killed the live runs and the tenants")
			return runner.ExitInterrupted
		}
	}
	relays.Wait()

	rep := rehearsal{Latency: speedText(f.latency), Tags: f.tags, Verdict: "PASS"}
	for _, t := range tenants {
		rep.Tenants = append(rep.Tenants, t.outcome())
	}
	code = rehearsalCode(rep.Tenants)
	if code != runner.ExitPassed {
		rep.Verdict = "FAIL"
	}
	rep.WallMS = time.Since(started).Milliseconds()
	if wasInterrupted {
		rep.Verdict, code = "INTERRUPTED", runner.ExitInterrupted
	}
	writeRehearsal(stdout, rep)
	if data, err := json.MarshalIndent(rep, "", "  "); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "rehearsal.json"), append(data, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "flowtest rehearse: %v\n", err)
			if code == runner.ExitPassed {
				code = runner.ExitFailed
			}
		}
	}
	return code
}

func speedText(d time.Duration) string {
	if d == 0 {
		return "without added latency (a fast tenant)"
	}
	return d.String() + " each"
}

// validate refuses a wrong flag value before anything starts, naming the flag.
func (f *rehearseFlags) validate(uses map[string]flagUse) error {
	if f.latency < 0 {
		return refuse("--latency %s: want 0 (a fast tenant) or a positive duration, e.g. 500ms", f.latency)
	}
	if f.shards < 1 {
		return refuse("--shards %d: want at least 1", f.shards)
	}
	if err := existingDir("--features", f.features, "run flowtest from the repository root, or pass --features"); err != nil {
		return err
	}
	if err := creatableDir("--out", f.out); err != nil {
		return err
	}
	if _, given := uses["durations-from"]; given {
		if err := existingDir("--durations-from", f.durationsFrom, "an archive of an earlier run"); err != nil {
			return err
		}
	}
	if _, given := uses["step-timeout"]; given {
		if d, err := time.ParseDuration(f.stepTimeout); err != nil || d <= 0 {
			return refuse("--step-timeout %q: want a positive duration, e.g. 10m", f.stepTimeout)
		}
	}
	if _, given := uses["timeout-scale"]; given {
		if x, err := strconv.ParseFloat(f.timeoutScale, 64); err != nil || !(x > 0) || math.IsInf(x, 0) {
			return refuse("--timeout-scale %q: want a positive decimal, e.g. 3", f.timeoutScale)
		}
	}
	if _, given := uses["confirmed-by"]; given && strings.TrimSpace(f.confirmedBy) == "" {
		return refuse("--confirmed-by %q: empty; name the confirmer, or leave the flag out", f.confirmedBy)
	}
	// The live runs are started in the operator env directory: every path they get is
	// absolute.
	for _, p := range []*string{&f.features, &f.out, &f.durationsFrom} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return refuse("%q: %v", *p, err)
		}
		*p = abs
	}
	return nil
}

// kintone's limits (kintone-api.md): concurrent requests per domain, and requests per app and
// day on the standard plan.
const (
	kintoneConcurrencyLimit = 100
	kintoneDailyRequests    = 10000
)

// dailyLimitWarnings are the emulator's warnings that an app went over its daily requests
// (it keeps serving, as kintone does, so only its log tells). A rehearsal that sees one
// fails: on a real tenant that run would have mailed the administrator, and a live run's
// budget (internal/budget) is meant to keep it far below.
func (t *tenant) dailyLimitWarnings() []string {
	if t.emuStderr == "" {
		return nil
	}
	data, _ := os.ReadFile(t.emuStderr)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "daily request limit of app") {
			out = append(out, excerpt.OneLine(line, 240))
		}
	}
	return out
}

// startTenant starts the emulator as a stand-alone tenant that writes the operator env, and
// waits for its first stdout line: it is printed once the operator env is complete.
func (t *tenant) startTenant(ctx context.Context, sb string, latency time.Duration) error {
	if err := os.MkdirAll(t.work, 0o700); err != nil {
		return err
	}
	// A busy tenant's limits, as kintone has them: the live path must back off on 429 and
	// stay within a day's requests per app.
	args := []string{"kintone", "serve", "--exit-on-stdin-eof", "--operator-env", t.opDir,
		"--concurrency-limit", fmt.Sprint(kintoneConcurrencyLimit), "--daily-request-limit", fmt.Sprint(kintoneDailyRequests)}
	if latency > 0 {
		args = append(args, "--latency", fmt.Sprintf("customers=%s,deals=%s", latency, latency))
	}
	// Its TLS temp files go inside the rehearsal's work dir, and go with it.
	env := append(proc.PlatformEnv(), "TMPDIR="+t.work, "TMP="+t.work, "TEMP="+t.work)
	p, err := proc.Start(ctx, proc.Spec{Name: "tenant", Path: sb, Args: args, Env: env, Dir: t.work, LogDir: t.work, ParentPipe: true})
	if err != nil {
		return fmt.Errorf("start the stand-alone emulator: %w", err)
	}
	t.emu, t.emuStderr = p, p.StderrPath()
	return wait.Until(ctx, "tenant "+t.name+" to write the operator env", 30*time.Second, 20*time.Millisecond,
		func(context.Context) (bool, string, error) {
			text, _ := p.Stdout()
			if line, _, ok := strings.Cut(text, "\n"); ok {
				var info struct {
					BaseURL string `json:"base_url"`
				}
				if err := json.Unmarshal([]byte(line), &info); err != nil || info.BaseURL == "" {
					return false, "", wait.Permanent(fmt.Errorf("the emulator's first stdout line is not its address: %q", line))
				}
				t.baseURL = info.BaseURL
				return true, "", nil
			}
			if res, done := p.Exited(); done {
				return false, "", wait.Permanent(fmt.Errorf("the emulator exited (%s): %s", res, p.StderrTail()))
			}
			return false, "no address line yet", nil
		})
}

// startRun starts `flowtest run --target live` in the operator env directory, as the operator
// would type it after `. ./tokens.sh`: its OS environment is the platform variables plus the
// writable tokens; everything else comes from the .env there.
func (t *tenant) startRun(ctx context.Context, self string, f rehearseFlags) error {
	exports, err := parseExports(filepath.Join(t.opDir, "tokens.sh"))
	if err != nil {
		return err
	}
	args := []string{"run", "--target", "live", "--confirmed-by", f.confirmedBy,
		"--lock-dir", filepath.Join(t.work, "locks"), "--out", t.outDir, "--features", f.features}
	if f.tags != "" {
		args = append(args, "--tags", f.tags)
	}
	if t.n > 1 {
		args = append(args, "--shard", fmt.Sprintf("%d/%d", t.i, t.n))
	}
	if f.durationsFrom != "" {
		args = append(args, "--durations-from", f.durationsFrom)
	}
	if f.stepTimeout != "" {
		args = append(args, "--step-timeout", f.stepTimeout)
	}
	if f.timeoutScale != "" {
		args = append(args, "--timeout-scale", f.timeoutScale)
	}
	if f.allowEmpty {
		args = append(args, "--allow-empty")
	}
	if f.keepWorkDirs {
		args = append(args, "--keep-workdirs")
	}
	p, err := proc.Start(ctx, proc.Spec{Name: "live-run", Path: self, Args: args,
		Env: append(proc.PlatformEnv(), exports...), Dir: t.opDir, LogDir: t.work})
	if err != nil {
		return fmt.Errorf("start the live run: %w", err)
	}
	t.run = p
	return nil
}

var exportRE = regexp.MustCompile(`^export ([A-Za-z_][A-Za-z0-9_]*)=(?:'([^']*)'|([^\s'"$\\]*))$`)

// parseExports reads the `export NAME='value'` lines of tokens.sh (no shell runs: anything
// else but comments and blank lines is refused with its line).
func parseExports(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the tokens script: %w", err)
	}
	var env []string
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := exportRE.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: not an `export NAME='value'` line", path, n+1)
		}
		env = append(env, m[1]+"="+m[2]+m[3])
	}
	if len(env) == 0 {
		return nil, fmt.Errorf("%s exports no token", path)
	}
	return env, nil
}

// lineWriter writes whole lines from several relays without interleaving them.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(prefix string, text []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s%s\n", prefix, strings.TrimRight(string(text), "\r\n"))
}

// relay copies a child's stdout log to the console, line by line with prefix, as it grows,
// until the child has exited and the log is read to its end. (proc writes a child's output
// to its log files; following the file keeps the child in a process group of its own.)
func relay(path, prefix string, done <-chan struct{}, out *lineWriter) {
	f, err := os.Open(path)
	if err != nil {
		out.line(prefix, []byte(fmt.Sprintf("(cannot follow the output: %v)", err)))
		return
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var partial []byte
	finished := false
	for {
		chunk, err := r.ReadBytes('\n')
		partial = append(partial, chunk...)
		if err == nil {
			out.line(prefix, partial)
			partial = nil
			continue
		}
		if finished {
			if len(partial) > 0 {
				out.line(prefix, partial)
			}
			return
		}
		select {
		case <-done:
			finished = true // one more pass reads what was written before the exit
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// outcome reads the tenant's archive: per scenario passed, failed (or blocked, interrupted),
// or not run; a scenario not run for a reason other than this platform (a declared need live
// mode cannot have here, e.g. windows) or another shard's selection is a problem.
func (t *tenant) outcome() tenantOutcome {
	o := tenantOutcome{Tenant: t.name, BaseURL: t.baseURL, ExitCode: t.result.ExitCode, WallMS: t.wall.Milliseconds()}
	if t.n > 1 {
		o.Shard = fmt.Sprintf("%d/%d", t.i, t.n)
	}
	var runs []string
	_ = filepath.WalkDir(t.outDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "run.json" {
			runs = append(runs, filepath.Dir(p))
		}
		return nil
	})
	tail := func(stdout bool) string {
		if t.run == nil {
			return ""
		}
		if stdout {
			return excerpt.LastLines(t.run.StdoutTail(), 3)
		}
		return excerpt.LastLines(t.run.StderrTail(), 5)
	}
	if len(runs) != 1 {
		o.Problems = append(o.Problems, fmt.Sprintf("live run %s and left %d archives (want 1): %s", t.result, len(runs), tail(false)))
		return o
	}
	o.Archive = runs[0]
	_, run, err := results.ReadArchive(o.Archive)
	if err != nil || run == nil {
		o.Problems = append(o.Problems, fmt.Sprintf("read the archive: %v", err))
		return o
	}
	for _, s := range run.Scenarios {
		switch {
		case s.Status == results.StatusPassed:
			o.Passed++
		case s.Status != results.StatusNotRun:
			o.Failed++
			o.Problems = append(o.Problems, fmt.Sprintf("%s %s: %s", s.ID, s.Status, excerpt.OneLine(s.Reason, 240)))
		case s.NotRunCategory == results.NotRunTag:
			// not this tenant's: filtered out, or another shard's
		case s.NotRunCategory == results.NotRunPlatform:
			o.Allowed = append(o.Allowed, s.ID+": "+s.Reason)
		default:
			o.NotRun++
			o.Problems = append(o.Problems, fmt.Sprintf("%s not run: %s", s.ID, s.Reason))
		}
	}
	if run.State != results.RunComplete {
		o.Problems = append(o.Problems, "the run did not complete: "+run.State)
	}
	switch {
	case len(o.Problems) > 0:
	case t.result.ExitCode == runner.ExitNothingRan:
		o.Problems = append(o.Problems, "nothing ran: every scenario of this tenant was not run (not green)")
	case t.result.ExitCode != runner.ExitPassed: // e.g. a leak found by the run's archive check
		o.Problems = append(o.Problems, fmt.Sprintf("live run %s: %s", t.result, tail(true)))
	}
	o.APIRequests = run.APIRequests
	for _, w := range t.dailyLimitWarnings() {
		o.Problems = append(o.Problems, "the tenant's daily request limit was exceeded: "+w)
	}
	return o
}

// code is the tenant's part of the exit code: 0 clean; 2 refused before anything ran; 3
// nothing ran; 1 otherwise.
func (o tenantOutcome) code() int {
	switch {
	case len(o.Problems) == 0:
		return runner.ExitPassed
	case o.Archive == "" && o.ExitCode == runner.ExitRefused:
		return runner.ExitRefused
	case o.ExitCode == runner.ExitNothingRan && o.Passed+o.Failed+o.NotRun == 0:
		return runner.ExitNothingRan
	}
	return runner.ExitFailed
}

// rehearsalCode combines the tenants' codes: refused wins over failed, failed over nothing
// ran (as a single run decides).
func rehearsalCode(tenants []tenantOutcome) int {
	code := runner.ExitPassed
	rank := map[int]int{runner.ExitPassed: 0, runner.ExitNothingRan: 1, runner.ExitFailed: 2, runner.ExitRefused: 3}
	for _, o := range tenants {
		if c := o.code(); rank[c] > rank[code] {
			code = c
		}
	}
	return code
}

// writeRehearsal prints the combined report: per tenant what passed, failed and did not run,
// its archive and wall time, then the verdict.
func writeRehearsal(w io.Writer, r rehearsal) {
	fmt.Fprintf(w, "\nRehearsal of the live path, business reads %s:\n", r.Latency)
	var passed, failed, notRun int
	for _, o := range r.Tenants {
		shard := ""
		if o.Shard != "" {
			shard = ", shard " + o.Shard
		}
		fmt.Fprintf(w, "  tenant %s (%s%s): %d passed, %d failed, %d not run — %s, exit %d\n    archive %s\n",
			o.Tenant, o.BaseURL, shard, o.Passed, o.Failed, o.NotRun, (time.Duration(o.WallMS) * time.Millisecond).Round(time.Second), o.ExitCode, orDash(o.Archive))
		for _, a := range o.Allowed {
			fmt.Fprintf(w, "    not run (this platform): %s\n", a)
		}
		if len(o.APIRequests) > 0 {
			var apps []string
			for _, app := range slices.Sorted(maps.Keys(o.APIRequests)) {
				apps = append(apps, fmt.Sprintf("%s %d", app, o.APIRequests[app].Requests))
			}
			fmt.Fprintf(w, "    kintone requests: %s\n", strings.Join(apps, ", "))
		}
		for _, p := range o.Problems {
			fmt.Fprintf(w, "    %s\n", p)
		}
		passed, failed, notRun = passed+o.Passed, failed+o.Failed, notRun+o.NotRun
	}
	fmt.Fprintf(w, "rehearsal %s: %d passed, %d failed, %d not run on %d tenant(s); wall %s\n",
		r.Verdict, passed, failed, notRun, len(r.Tenants), (time.Duration(r.WallMS) * time.Millisecond).Round(time.Second))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
