// Package rehearse is `flowtest rehearse`: the live path rehearsed end to end without a tenant. Each stand-alone
// kintone emulator (`flowsandbox kintone serve --operator-env DIR`) writes an operator's live
// setup for itself (docs/live.md: .env, tokens.sh, the kSQL-Flow config, a deny list);
// then `flowtest run --target live` runs as a child process of its own binary, in DIR, with
// only the platform variables and tokens.sh's exports as its OS environment — exactly what an
// operator types for a release gate, with the reference CLIs as launchers. --shards N starts N
// tenants, one serial live run each over --shard i/N, at once: each tenant is isolated, so
// live mode's one-runner-per-tenant rule holds.
package rehearse

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/base/excerpt"
	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/harness/workdir"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// Options are what a rehearsal runs with; the command line checked every value (paths
// absolute: the live runs start in the operator env directory).
type Options struct {
	Latency       time.Duration // business-read latency of the tenants (0: a fast tenant)
	Shards        int           // tenants, one serial live run each over --shard i/N
	Tags          string
	Label         string // the selection's archive label
	Features      string
	Out           string
	SandboxBin    string // the flowsandbox binary: the tenants
	Self          string // the flowtest binary: the live runs
	ConfirmedBy   string
	DurationsFrom string
	StepTimeout   string
	TimeoutScale  string
	AllowEmpty    bool
	KeepWorkDirs  bool
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

// Outcome is what one tenant's live run came to, read from its archive.
type Outcome struct {
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

// Report is the combined report (also rehearsal.json beside the tenants' archives).
type Report struct {
	Latency string    `json:"business_read_latency"`
	Tags    string    `json:"tag_expression"`
	Tenants []Outcome `json:"tenants"`
	WallMS  int64     `json:"wall_ms"`
	Verdict string    `json:"verdict"` // PASS | FAIL | INTERRUPTED
	dir     string
}

// Run rehearses the live path: it starts the tenants, runs the live runs at once, relays
// their output and reads their archives into the report (printed, and saved by Save). The
// error is a refusal when a tenant did not start (nothing ran), Interrupted when a signal cut
// the rehearsal short before a report.
//
// Signals come as the command's: interrupt is cancelled by the first (the live runs are
// interrupted, each writes its archive marked interrupted), killed is closed by the second
// (they are killed). Children run in process groups of their own, so a terminal's Ctrl-C
// reaches them only through here, once.
func Run(interrupt context.Context, killed <-chan struct{}, o Options, stdout, stderr io.Writer) (*Report, error) {
	started := time.Now()
	speed := "fast"
	if o.Latency > 0 {
		speed = o.Latency.String()
	}
	dir, err := results.NewDatedDir(o.Out, "rehearsal-"+speed+"-"+o.Label, started)
	if err != nil {
		return nil, refusal.New("--out %q: %v", o.Out, err)
	}
	// Owned like a run's work dir, so that a killed rehearsal's (operator envs with tokens)
	// is removed by the next run or rehearsal.
	if rep, err := workdir.RemoveDead(""); err == nil && rep.Line() != "" {
		fmt.Fprintln(stderr, rep.Line())
	}
	wd, err := workdir.CreateAs("", workdir.RehearsePrefix, o.KeepWorkDirs)
	if err != nil {
		return nil, err
	}
	work := wd.Path()
	if o.KeepWorkDirs {
		defer fmt.Fprintf(stderr, "flowtest rehearse: kept the operator envs (tokens included) and logs at %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}

	interrupted := interrupt.Done()
	ctx, cancel := context.WithCancel(interrupt)
	defer cancel()

	fmt.Fprintf(stdout, "rehearse: the live path on %d stand-alone tenant(s), business reads %s; archives under %s\n", o.Shards, speedText(o.Latency), dir)
	tenants := newTenants(o.Shards, speed, work, dir)
	// The emulators outlive the runs: each is stopped only after every run has ended.
	defer stopTenants(tenants, killed, stderr)
	for _, t := range tenants {
		if err := t.startTenant(ctx, o.SandboxBin, o.Latency); err != nil {
			if ctx.Err() != nil {
				return nil, refusal.Interrupted("interrupted before any run started")
			}
			return nil, refusal.New("tenant %s: %v", t.name, err)
		}
	}

	relays, exited, err := startRuns(ctx, o, tenants, stdout, stderr)
	if err != nil {
		return nil, err
	}
	wasInterrupted, err := awaitRuns(tenants, exited, interrupted, killed)
	if err != nil {
		return nil, err
	}
	relays.Wait()

	rep := &Report{Latency: speedText(o.Latency), Tags: o.Tags, Verdict: "PASS", dir: dir}
	for _, t := range tenants {
		rep.Tenants = append(rep.Tenants, t.outcome())
	}
	if rep.Result() != Clean {
		rep.Verdict = "FAIL"
	}
	rep.WallMS = time.Since(started).Milliseconds()
	if wasInterrupted {
		rep.Verdict = "INTERRUPTED"
	}
	writeRehearsal(stdout, *rep)
	return rep, nil
}

// newTenants describes the n tenants of a rehearsal: work under work, archives under dir.
func newTenants(n int, speed, work, dir string) []*tenant {
	tenants := make([]*tenant, n)
	for i := range tenants {
		t := &tenant{i: i + 1, n: n, name: fmt.Sprintf("%s %d/%d", speed, i+1, n)}
		t.work = filepath.Join(work, fmt.Sprintf("tenant-%d", t.i))
		t.opDir = filepath.Join(t.work, "operator")
		t.outDir = filepath.Join(dir, fmt.Sprintf("tenant-%d", t.i))
		tenants[i] = t
	}
	return tenants
}

// stopTenants stops every started emulator, or kills it once killed is closed.
func stopTenants(tenants []*tenant, killed <-chan struct{}, stderr io.Writer) {
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
}

// startRuns starts each tenant's live run with its output relayed, line by line and
// prefixed with the tenant's name, to stdout and stderr; each tenant is sent on exited when
// its run has ended. relays is done when all output is relayed. A run that cannot start
// kills those already started.
func startRuns(ctx context.Context, o Options, tenants []*tenant, stdout, stderr io.Writer) (relays *sync.WaitGroup, exited chan *tenant, err error) {
	out, errOut := &lineWriter{w: stdout}, &lineWriter{w: stderr}
	relays = &sync.WaitGroup{}
	exited = make(chan *tenant, len(tenants))
	for _, t := range tenants {
		if err := t.startRun(ctx, o); err != nil {
			for _, o := range tenants {
				if o.run != nil {
					o.run.KillTree()
				}
			}
			return nil, nil, fmt.Errorf("tenant %s: %w", t.name, err)
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
	return relays, exited, nil
}

// awaitRuns waits until every run has exited. The first interrupt is passed on to the
// runs (wasInterrupted); killed kills them and ends the wait with a refusal.
func awaitRuns(tenants []*tenant, exited <-chan *tenant, interrupted <-chan struct{}, killed <-chan struct{}) (wasInterrupted bool, err error) {
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
			return false, refusal.Interrupted("killed the live runs and the tenants")
		}
	}
	return wasInterrupted, nil
}

// Interrupted tells whether a signal cut the live runs short (their archives say so).
func (r *Report) Interrupted() bool { return r.Verdict == "INTERRUPTED" }

// Save writes the report as rehearsal.json beside the tenants' archives, through redact (a
// redactor's JSON: every file flowtest writes passes one), and returns the file's path.
func (r *Report) Save(redact func([]byte) ([]byte, error)) (string, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if data, err = redact(data); err != nil {
		return "", fmt.Errorf("rehearsal.json: %w", err)
	}
	path := filepath.Join(r.dir, "rehearsal.json")
	return path, os.WriteFile(path, data, 0o644)
}

func speedText(d time.Duration) string {
	if d == 0 {
		return "without added latency (a fast tenant)"
	}
	return d.String() + " each"
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
// budget (internal/app/budget) is meant to keep it far below.
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
func (t *tenant) startRun(ctx context.Context, f Options) error {
	exports, err := ParseExports(filepath.Join(t.opDir, "tokens.sh"))
	if err != nil {
		return err
	}
	args := []string{"run", "--target", "live", "--confirmed-by", f.ConfirmedBy,
		"--lock-dir", filepath.Join(t.work, "locks"), "--out", t.outDir, "--features", f.Features}
	if f.Tags != "" {
		args = append(args, "--tags", f.Tags)
	}
	if t.n > 1 {
		args = append(args, "--shard", fmt.Sprintf("%d/%d", t.i, t.n))
	}
	if f.DurationsFrom != "" {
		args = append(args, "--durations-from", f.DurationsFrom)
	}
	if f.StepTimeout != "" {
		args = append(args, "--step-timeout", f.StepTimeout)
	}
	if f.TimeoutScale != "" {
		args = append(args, "--timeout-scale", f.TimeoutScale)
	}
	if f.AllowEmpty {
		args = append(args, "--allow-empty")
	}
	if f.KeepWorkDirs {
		args = append(args, "--keep-workdirs")
	}
	p, err := proc.Start(ctx, proc.Spec{Name: "live-run", Path: f.Self, Args: args,
		Env: append(proc.PlatformEnv(), exports...), Dir: t.opDir, LogDir: t.work})
	if err != nil {
		return fmt.Errorf("start the live run: %w", err)
	}
	t.run = p
	return nil
}

var exportRE = regexp.MustCompile(`^export ([A-Za-z_][A-Za-z0-9_]*)=(?:'([^']*)'|([^\s'"$\\]*))$`)

// ParseExports reads the `export NAME='value'` lines of tokens.sh (no shell runs: anything
// else but comments and blank lines is refused with its line).
func ParseExports(path string) ([]string, error) {
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
func (t *tenant) outcome() Outcome {
	o := Outcome{Tenant: t.name, BaseURL: t.baseURL, ExitCode: t.result.ExitCode, WallMS: t.wall.Milliseconds()}
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

// Result is what a tenant's live run, or the whole rehearsal, came to.
type Result int

// Results from the best to the worst: a rehearsal is its worst tenant's (refused wins over
// failed, failed over nothing ran, as a single run decides).
const (
	Clean      Result = iota // every scenario that ran passed
	NothingRan               // every selected scenario of the tenant was not run
	Failed                   // a scenario failed, or the run or its archive did not hold
	Refused                  // refused before anything ran
)

// Result classifies the tenant's outcome.
func (o Outcome) Result() Result {
	switch {
	case len(o.Problems) == 0:
		return Clean
	case o.Archive == "" && o.ExitCode == runner.ExitRefused:
		return Refused
	case o.ExitCode == runner.ExitNothingRan && o.Passed+o.Failed+o.NotRun == 0:
		return NothingRan
	}
	return Failed
}

// Result is the rehearsal's: its worst tenant's.
func (r *Report) Result() Result {
	worst := Clean
	for _, o := range r.Tenants {
		worst = max(worst, o.Result())
	}
	return worst
}

// writeRehearsal prints the combined report: per tenant what passed, failed and did not run,
// its archive and wall time, then the verdict.
func writeRehearsal(w io.Writer, r Report) {
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
