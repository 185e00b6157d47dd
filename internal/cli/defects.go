package cli

// flowtest defects: the proof that every implemented scenario can fail (issue 10). For each
// planted defect of sandbox/defect/defects.yaml it builds a broken flowsandbox
// (`go build -tags defect_<name>`), runs the scenarios that must catch it with this very
// executable (`flowtest run --sandbox-bin …`), and reads their records: a defect is caught
// only when each declared scenario failed on the declared assertion while every process it
// started reached a normal end. A crash (see crashOf), a timeout or any other failure
// elsewhere is reported as ESCAPED, with what failed instead.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/harness/proc"
	"github.com/ksqlflow/flowtest/results"
	"github.com/ksqlflow/flowtest/runner"
)

// modulePath is the module whose root `flowtest defects` must run in: it builds the sandbox
// from source.
const modulePath = "github.com/ksqlflow/flowtest"

// catalogueFile is the defect catalogue, relative to the module root.
var catalogueFile = filepath.Join("sandbox", "defect", "defects.yaml")

// defectCatalogue is sandbox/defect/defects.yaml.
type defectCatalogue struct {
	Defects []plantedDefect `yaml:"defects"`
}

// plantedDefect is one catalogue entry.
type plantedDefect struct {
	Name        string `yaml:"name"`
	Component   string `yaml:"component"`
	Description string `yaml:"description"`
	// Fast defects run in CI (`go test` → `flowtest defects --fast`); the rest only in
	// `make defects`.
	Fast    bool          `yaml:"fast"`
	Catches []defectCatch `yaml:"catches"`
	// Awaiting names scenarios, not implemented yet, that will catch the defect. A defect
	// with no catches yet is reported as "not yet covered", never as caught.
	Awaiting  []string     `yaml:"awaiting"`
	UnitTests []defectUnit `yaml:"unit_tests"`
}

// defectCatch is one scenario that must catch a defect, and how.
type defectCatch struct {
	Scenario string `yaml:"scenario"`
	// Assertion is a substring of the `what` of the scenario's first failing assertion, or
	// of its failing step's error.
	Assertion string `yaml:"assertion"`
	// Seen, when set, must also occur in that assertion's `seen` (or the step error): it
	// pins the reason when the assertion alone could fail for another one.
	Seen string `yaml:"seen"`
}

// defectUnit is a package's unit tests that must fail when built with the defect's tag.
type defectUnit struct {
	Package string   `yaml:"package"`
	Tests   []string `yaml:"tests"`
}

var defectNamePattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// tag is the build tag that plants the defect.
func (d plantedDefect) tag() string { return "defect_" + strings.ReplaceAll(d.Name, "-", "_") }

func (d plantedDefect) scenarios() []string {
	var ids []string
	for _, c := range d.Catches {
		ids = append(ids, c.Scenario)
	}
	return ids
}

// loadDefectCatalogue reads and validates the catalogue. known, when non-nil, is the set of
// scenario ids of the manifest.
func loadDefectCatalogue(path string, known map[string]bool) (*defectCatalogue, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the defect catalogue: %w", err)
	}
	var cat defectCatalogue
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cat); err != nil {
		return nil, fmt.Errorf("defect catalogue %s: %w", path, err)
	}
	if len(cat.Defects) == 0 {
		return nil, fmt.Errorf("defect catalogue %s: no defects", path)
	}
	seen := map[string]bool{}
	for i, d := range cat.Defects {
		where := fmt.Sprintf("defect catalogue %s: defect %d (%s)", path, i+1, d.Name)
		switch {
		case !defectNamePattern.MatchString(d.Name):
			return nil, fmt.Errorf("%s: name must be lower-case words joined by '-'", where)
		case seen[d.Name]:
			return nil, fmt.Errorf("%s: duplicate name", where)
		case d.Description == "":
			return nil, fmt.Errorf("%s: no description", where)
		case len(d.Catches) == 0 && len(d.Awaiting) == 0 && len(d.UnitTests) == 0:
			// A defect below what any scenario can reach (a race window of the emulator)
			// is proven by its unit tests alone.
			return nil, fmt.Errorf("%s: names neither the scenarios that catch it, nor those it awaits, nor unit tests", where)
		}
		seen[d.Name] = true
		scen := map[string]bool{}
		for _, c := range d.Catches {
			switch {
			case c.Scenario == "" || c.Assertion == "":
				return nil, fmt.Errorf("%s: every catch needs a scenario and the failing assertion", where)
			case scen[c.Scenario]:
				return nil, fmt.Errorf("%s: scenario %s listed twice", where, c.Scenario)
			case known != nil && !known[c.Scenario]:
				return nil, fmt.Errorf("%s: scenario %s is not in the manifest", where, c.Scenario)
			}
			scen[c.Scenario] = true
		}
		for _, a := range d.Awaiting {
			if known != nil && !known[a] {
				return nil, fmt.Errorf("%s: awaited scenario %s is not in the manifest", where, a)
			}
		}
		for _, u := range d.UnitTests {
			if u.Package == "" || len(u.Tests) == 0 {
				return nil, fmt.Errorf("%s: unit_tests need a package and test names", where)
			}
		}
	}
	return &cat, nil
}

// selectDefects applies --only (names, either form: resume-prints-new or
// defect_resume_prints_new) and --fast.
func selectDefects(all []plantedDefect, only []string, fast bool) ([]plantedDefect, error) {
	want := map[string]bool{}
	for _, o := range only {
		for _, n := range strings.Split(o, ",") {
			n = strings.TrimSpace(n)
			n = strings.ReplaceAll(strings.TrimPrefix(n, "defect_"), "_", "-")
			if n != "" {
				want[n] = true
			}
		}
	}
	var out []plantedDefect
	found := map[string]bool{}
	for _, d := range all {
		if len(want) > 0 && !want[d.Name] {
			continue
		}
		found[d.Name] = true
		if fast && !d.Fast {
			continue
		}
		out = append(out, d)
	}
	var names []string
	for n := range want {
		if !found[n] {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		sort.Strings(names)
		return nil, refuse("--only: no defect named %s in the catalogue", strings.Join(names, ", "))
	}
	if len(out) == 0 {
		return nil, refuse("no defect selected")
	}
	return out, nil
}

// Verdicts of one scenario against one defect.
const (
	verdictCaught     = "yes"
	verdictEscaped    = "ESCAPED"
	verdictNotCovered = "not yet covered"
	verdictControlOK  = "passes"
	verdictControlBad = "FAILS"
)

// defectRow is one line of the table.
type defectRow struct {
	defect   string
	wall     string // on the first row of a defect only
	scenario string
	verdict  string
	why      string // escape reason
	failing  string // the failing assertion seen
	dur      time.Duration
}

func (r defectRow) bad() bool {
	return r.verdict == verdictEscaped || r.verdict == verdictControlBad
}

// judge decides whether a scenario record shows the catch: the scenario failed, and its first
// failing assertion (or, without one, its failing step) is the declared one.
func judge(c defectCatch, rec *results.Scenario) (verdict, why, failing string) {
	if rec == nil {
		return verdictEscaped, "no scenario record was written", ""
	}
	switch rec.Status {
	case results.StatusPassed:
		return verdictEscaped, "the scenario passed", ""
	case results.StatusNotRun:
		return verdictEscaped, "the scenario did not run: " + rec.Reason, ""
	case results.StatusFailed:
	default:
		return verdictEscaped, "unknown scenario status " + rec.Status, ""
	}
	// A defect that crashes the SUT proves only that the crash is noticed, not that the
	// scenario's assertion can fail: whatever failed first, it is no catch.
	crash := crashOf(rec)
	var a *results.Assertion
	for i := range rec.Assertions {
		if !rec.Assertions[i].OK {
			a = &rec.Assertions[i]
			break
		}
	}
	var s *results.Step
	for i := range rec.Steps {
		if rec.Steps[i].Status == "failed" {
			s = &rec.Steps[i]
			break
		}
	}
	switch {
	case a != nil:
		failing = fmt.Sprintf("%s: expected %s, seen %s", a.What, a.Expected, excerpt(a.Seen, c.Seen, 40))
		if crash != "" {
			return verdictEscaped, "crashed: " + crash, failing
		}
		if strings.Contains(a.What, c.Assertion) && (c.Seen == "" || strings.Contains(a.Seen, c.Seen)) {
			return verdictCaught, "", failing
		}
	case s != nil:
		failing = "step " + s.Text + ": " + s.Error
		if crash != "" {
			return verdictEscaped, "crashed: " + crash, failing
		}
	default:
		failing = "cleanup: " + rec.Cleanup.Error
		return verdictEscaped, "failed only in cleanup (no step failed)", failing
	}
	if s != nil && strings.Contains(s.Error, c.Assertion) && (c.Seen == "" || strings.Contains(s.Error, c.Seen)) {
		return verdictCaught, "", failing
	}
	want := fmt.Sprintf("%q", c.Assertion)
	if c.Seen != "" {
		want += fmt.Sprintf(" seeing %q", c.Seen)
	}
	return verdictEscaped, "failed for another reason (wanted " + want + ")", failing
}

// The crash rule (also in defects.yaml's header and sandbox/defect/doc.go). A scenario run
// under a defect crashed when a process it started (its record's `processes`) shows one of:
//
//  1. a Go runtime failure in its stderr tail: a line starting `panic: ` or `fatal error: `,
//     or a goroutine dump header `goroutine <n> [` (the tail may keep only the dump's end);
//  2. an end by a signal the harness never sends: harness/proc stops with SIGINT or SIGTERM
//     and kills with SIGKILL, so any other signal (SIGSEGV, SIGABRT, SIGBUS, …) is the
//     process's own death. "still running when recorded" is not an end: the scenario failed
//     before the process finished, and the harness stops it afterwards;
//  3. a kintone error code (CB_XXnn, GAIA_XXnn) in its stderr tail: a kintone refusal
//     reached the output instead of being handled (or adjudicated) by the SUT;
//  4. for a FlowNet process, an `Error [<CODE>]` line on stderr, or an --json
//     invocation_result_code, whose code says FlowNet failed instead of deciding an outcome:
//     SCHEDULER_FAILED, a command's fallback code (an error that carried no code of its
//     own), INTERNAL_ERROR, or a repository code that means its own records broke an
//     invariant (crashCodes). Codes a scenario can expect as a decision (RUN_ALREADY_EXISTS,
//     LOCK_CONFLICT, NETWORK_LEASE_INTERRUPTED, REVISION_CONFLICT, REMOTE_ERROR without a
//     kintone code, …) are not crashes.
//
// Exit codes alone are not judged: FlowNet's 1 and kSQL-Flow's 1 to 5 are ordinary ends that
// scenarios assert on, and a Go panic's exit 2 is caught by rule 1.
var (
	goRuntimeFailure = regexp.MustCompile(`(?m)^(panic: |fatal error: |goroutine \d+ \[).*$`)
	kintoneErrorCode = regexp.MustCompile(`\b(?:CB|GAIA)_[A-Z]{2}\d{2}\b`)
	flownetErrorLine = regexp.MustCompile(`(?m)^Error \[([A-Z0-9_]+)\].*$`)
	flownetJSONCode  = regexp.MustCompile(`"invocation_result_code"\s*:\s*"([A-Z0-9_]+)"`)
	// harnessSignals are the signals harness/proc sends, by the names proc records on Unix
	// (and Go's own names, should a record carry them).
	harnessSignals = map[string]bool{"SIGKILL": true, "SIGINT": true, "SIGTERM": true, "killed": true, "interrupt": true, "terminated": true}
	crashCodes     = map[string]bool{
		// The scheduler's own "unexpected error" close (§1.3.2).
		"SCHEDULER_FAILED": true,
		// Command fallbacks (§1.10, §2.2, §2.7): the error had no code of its own.
		"RUN_NETWORK_FAILED": true, "ENSURE_RUN_FAILED": true, "POLL_REQUESTS_FAILED": true, "STATUS_FAILED": true,
		"CANCEL_RUN_FAILED": true, "ARCHIVE_RUN_FAILED": true, "FORCE_UNLOCK_NETWORK_FAILED": true,
		"RESOLVE_NODE_FAILED": true, "RECORD_JOB_UNLOCK_FAILED": true,
		"INTERNAL_ERROR": true,
		// Repository codes (§2.6) that mean FlowNet's own records broke an invariant.
		"DUPLICATE_RECORD": true, "INVALID_STATE_TRANSITION": true, "ATTEMPT_NUMBER_CONFLICT": true,
		"ATTEMPT_TERMINAL": true, "ATTEMPT_LIFECYCLE_VIOLATION": true, "MULTIPLE_RECORDS": true,
		"NODE_STATE_NOT_UNIQUE": true, "UNIQUE_KEY_TOO_LONG": true, "AUDIT_CONFLICT": true,
	}
)

// stillRunning is what harness/scenario records as the signal of a process that had not
// exited when the record was written.
const stillRunning = "still running when recorded"

// crashOf applies the crash rule to a scenario record: it returns the first sign that a
// process of the scenario did not reach a normal end ("<process>: <why>"), or "".
func crashOf(rec *results.Scenario) string {
	for _, p := range rec.Processes {
		if m := goRuntimeFailure.FindString(p.StderrTail); m != "" {
			return fmt.Sprintf("%s: Go runtime failure %q", p.Name, oneLine(m, 120))
		}
		if p.Signal != "" && p.Signal != stillRunning && !harnessSignals[p.Signal] {
			return fmt.Sprintf("%s: ended by %s, a signal the harness never sends", p.Name, p.Signal)
		}
		if m := kintoneErrorCode.FindStringIndex(p.StderrTail); m != nil {
			return fmt.Sprintf("%s: kintone error %s on stderr: %q", p.Name, p.StderrTail[m[0]:m[1]], oneLine(lineAround(p.StderrTail, m[0]), 160))
		}
		if !isFlowNet(p) {
			continue
		}
		for _, m := range flownetErrorLine.FindAllStringSubmatch(p.StderrTail, -1) {
			if crashCodes[m[1]] {
				return fmt.Sprintf("%s: %q", p.Name, oneLine(m[0], 160))
			}
		}
		for _, m := range flownetJSONCode.FindAllStringSubmatch(p.StdoutTail, -1) {
			if crashCodes[m[1]] {
				return fmt.Sprintf("%s: invocation_result_code %s", p.Name, m[1])
			}
		}
	}
	return ""
}

// isFlowNet tells a FlowNet CLI process from the others (kSQL-Flow, tools): the steps name
// them "flownet-…", the sandbox runs `flowsandbox flownet …`, the real one is dist/cli/index.js.
func isFlowNet(p results.Process) bool {
	if strings.HasPrefix(strings.ToLower(p.Name), "flownet") {
		return true
	}
	for _, a := range p.Argv {
		if a == "flownet" || strings.HasSuffix(filepath.ToSlash(a), "cli/index.js") {
			return true
		}
	}
	return false
}

// lineAround is the line of s that holds byte offset i.
func lineAround(s string, i int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		return s[start:]
	}
	return s[start : i+end]
}

// defectsRun is one `flowtest defects` invocation.
type defectsRun struct {
	root, goBin, self, work string
	log                     io.Writer
	ctx                     context.Context
}

func cmdDefects(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	fset := flag.NewFlagSet("defects", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var only multiFlag
	fset.Var(&only, "only", "run only these defects (comma-separated or repeated names)")
	fast := fset.Bool("fast", false, "run only the defects marked fast (the CI subset)")
	goBin := fset.String("go", "go", "the go command that builds the broken sandboxes")
	keep := fset.Bool("keep", false, "keep the work dir (broken binaries, run logs, archives) even when every defect is caught")
	noControl := fset.Bool("no-control", false, "skip the control run of the declared scenarios on the correct sandbox")
	controlFrom := fset.String("control-from", "", "take the control from this archive of a `flowtest run` on the correct sandbox of this checkout instead of running it again")
	jobs := fset.Int("jobs", defaultDefectJobs, "defects checked at once (each builds its own sandbox and runs its own emulator)")
	fset.Usage = helpFor(fset, "defects")
	if err := fset.Parse(args); err != nil {
		return runner.ExitRefused
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "flowtest defects: unexpected arguments %q\n", fset.Args())
		return runner.ExitRefused
	}
	if *jobs < 1 {
		fmt.Fprintf(stderr, "flowtest defects: --jobs %d: at least 1\n", *jobs)
		return runner.ExitRefused
	}
	root, err := moduleRoot(*goBin)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: %v\n", err)
		return runner.ExitRefused
	}
	m, err := runner.LoadManifest(os.DirFS(filepath.Join(root, "features")), "manifest.yaml")
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: %v\n", err)
		return runner.ExitRefused
	}
	known := map[string]bool{}
	for _, e := range m.Scenarios {
		known[e.ID] = true
	}
	cat, err := loadDefectCatalogue(filepath.Join(root, catalogueFile), known)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: %v\n", err)
		return runner.ExitRefused
	}
	selected, err := selectDefects(cat.Defects, only, *fast)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: %v\n", err)
		return runner.ExitRefused
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: find this executable: %v\n", err)
		return runner.ExitRefused
	}
	work, err := os.MkdirTemp("", "flowtest-defects-")
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: %v\n", err)
		return runner.ExitFailed
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var interrupted atomic.Bool
	go func() {
		select {
		case <-sigs:
			interrupted.Store(true)
			fmt.Fprintln(stderr, "flowtest defects: interrupted; stopping the current run")
			cancel()
		case <-ctx.Done():
		}
	}()
	r := &defectsRun{root: root, goBin: *goBin, self: self, work: work, log: &syncWriter{w: stdout}, ctx: ctx}
	start := time.Now()
	fmt.Fprintf(stdout, "flowtest defects: %d of %d planted defects (%s), work dir %s\n", len(selected), len(cat.Defects), catalogueFile, work)

	if *controlFrom != "" && *noControl {
		fmt.Fprintln(stderr, "flowtest defects: --control-from and --no-control exclude each other")
		return runner.ExitRefused
	}
	var control []defectRow
	if *controlFrom != "" {
		rows, err := r.controlFromArchive(*controlFrom, selected)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest defects: --control-from %s: %v\n", *controlFrom, err)
			return runner.ExitRefused
		}
		control = rows
	}
	needs := map[string]runner.Needs{}
	for _, e := range m.Scenarios {
		needs[e.ID] = e.Needs
	}
	rows := append(control, r.all(selected, !*noControl && *controlFrom == "", *jobs, longestFirst(selected, control, needs))...)
	fmt.Fprintln(stdout)
	writeDefectTable(stdout, rows)

	caught, escaped, pending := 0, 0, 0
	for _, d := range selected {
		switch verdictOf(d.Name, rows) {
		case verdictCaught:
			caught++
		case verdictNotCovered:
			pending++
		default:
			escaped++
		}
	}
	controlBad := false
	for _, row := range rows {
		if row.verdict == verdictControlBad {
			controlBad = true
		}
	}
	fmt.Fprintf(stdout, "\n%d caught, %d escaped, %d not yet covered by a scenario; wall time %s\n", caught, escaped, pending, time.Since(start).Round(100*time.Millisecond))
	code := runner.ExitPassed
	switch {
	case interrupted.Load():
		code = runner.ExitInterrupted
	case controlBad:
		fmt.Fprintln(stdout, "the control run failed: a scenario that fails on the correct sandbox proves nothing about a defect")
		code = runner.ExitFailed
	case escaped > 0:
		code = runner.ExitFailed
	}
	if code != runner.ExitPassed || *keep {
		fmt.Fprintf(stdout, "work dir kept (run logs, archives, broken binaries): %s\n", work)
	} else {
		os.RemoveAll(work)
	}
	return code
}

// defaultDefectJobs: the runs mostly wait (emulated kintone latency, long reads), so a few
// at once fit two cores; the table is in catalogue order whatever the finishing order.
const defaultDefectJobs = 3

// all runs the control (if asked) and every selected defect, up to jobs at once, and returns
// their rows in catalogue order (control first). Each run has its own work dir, sandbox
// binary, emulator and run lock directory, so the runs cannot see each other.
//
// est, when not nil, estimates each selected defect's run time: the longest start first, so
// that a long one does not start last and stretch the wall time alone.
func (r *defectsRun) all(selected []plantedDefect, control bool, jobs int, est []time.Duration) []defectRow {
	type task func() []defectRow
	var tasks []task
	if control {
		tasks = append(tasks, func() []defectRow { return r.control(selected) })
	}
	for _, d := range selected {
		tasks = append(tasks, func() []defectRow { return r.defect(d) })
	}
	out := make([][]defectRow, len(tasks))
	order := make([]int, len(tasks)) // the order tasks start in; out stays in catalogue order
	for i := range order {
		order[i] = i
	}
	if est != nil && !control {
		sort.SliceStable(order, func(a, b int) bool { return est[order[a]] > est[order[b]] })
	}
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for _, i := range order {
		t := tasks[i]
		if r.ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if r.ctx.Err() == nil {
				out[i] = t()
			}
		}()
	}
	wg.Wait()
	var rows []defectRow
	for _, rs := range out {
		rows = append(rows, rs...)
	}
	return rows
}

// syncWriter serialises progress lines of concurrent runs.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// verdictOf is a defect's overall verdict: caught when every declared scenario caught it.
func verdictOf(name string, rows []defectRow) string {
	v := ""
	for _, row := range rows {
		if row.defect != name {
			continue
		}
		switch {
		case row.verdict == verdictEscaped:
			return verdictEscaped
		case v == "":
			v = row.verdict
		}
	}
	if v == "" {
		return verdictEscaped
	}
	return v
}

// moduleRoot is the directory of this module's go.mod, found by the go command from the
// working directory: the broken sandboxes are built from source.
func moduleRoot(goBin string) (string, error) {
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("`%s env GOMOD`: %w (flowtest defects builds the sandbox from source and needs the go command)", goBin, err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a module: run flowtest defects from the flowtest checkout")
	}
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", gomod, err)
	}
	first := strings.SplitN(string(data), "\n", 2)[0]
	if strings.TrimSpace(strings.TrimPrefix(first, "module")) != modulePath {
		return "", fmt.Errorf("%s is not the %s module: run flowtest defects from the flowtest checkout", gomod, modulePath)
	}
	return filepath.Dir(gomod), nil
}

// build builds flowsandbox with the given tags (none: the correct sandbox) into dir.
func (r *defectsRun) build(dir, tags string) (string, error) {
	bin := filepath.Join(dir, "flowsandbox")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	args := []string{"build"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, "-o", bin, "./cmd/flowsandbox")
	cmd := exec.CommandContext(r.ctx, r.goBin, args...)
	cmd.Dir = r.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", r.goBin, strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// runScenarios runs `flowtest run` (this executable) on the given sandbox binary and returns
// the records of the scenarios, by id, plus the run's exit code.
func (r *defectsRun) runScenarios(dir, bin string, ids []string) (map[string]*results.Scenario, int, error) {
	tags := make([]string, len(ids))
	for i, id := range ids {
		tags[i] = "@" + id
	}
	out := filepath.Join(dir, "archive")
	logPath := filepath.Join(dir, "run.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, 0, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(r.ctx, r.self, "run", "--sandbox-bin", bin, "--tags", strings.Join(tags, " or "), "--out", out,
		"--features", filepath.Join(r.root, "features"), "--lock-dir", filepath.Join(dir, "lock"))
	cmd.Dir = r.root
	cmd.Stdout, cmd.Stderr = logf, logf
	// An interrupt is passed on so that the run cleans up and stops its emulator; a kill
	// would orphan it.
	cmd.Cancel = func() error {
		if runtime.GOOS == "windows" {
			return cmd.Process.Kill()
		}
		return cmd.Process.Signal(os.Interrupt)
	}
	cmd.WaitDelay = time.Minute
	err = proc.RunBound(cmd) // a killed `flowtest defects` takes its runner along
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return nil, 0, fmt.Errorf("flowtest run: %w", err)
	}
	if code == runner.ExitRefused {
		return nil, code, fmt.Errorf("flowtest run refused (exit 2): %s", lastLines(logPath, 3))
	}
	recs := map[string]*results.Scenario{}
	for _, id := range ids {
		matches, _ := filepath.Glob(filepath.Join(out, "*", "*", "scenarios", id+".json"))
		if len(matches) != 1 {
			continue
		}
		data, err := os.ReadFile(matches[0])
		if err != nil {
			return nil, code, err
		}
		var rec results.Scenario
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, code, fmt.Errorf("scenario record %s: %w", matches[0], err)
		}
		recs[id] = &rec
	}
	return recs, code, nil
}

// control runs the union of the selected defects' scenarios on the correct sandbox: a
// scenario that already fails there proves nothing about a defect.
func (r *defectsRun) control(selected []plantedDefect) []defectRow {
	ids := controlIDs(selected)
	if len(ids) == 0 {
		return nil
	}
	start := time.Now()
	fail := func(why string) []defectRow {
		return []defectRow{{defect: controlName, wall: time.Since(start).Round(100 * time.Millisecond).String(), scenario: strings.Join(ids, ", "), verdict: verdictControlBad, why: why}}
	}
	dir := filepath.Join(r.work, "control")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err.Error())
	}
	bin, err := r.build(dir, "")
	if err != nil {
		return fail("build: " + err.Error())
	}
	recs, _, err := r.runScenarios(dir, bin, ids)
	if err != nil {
		return fail(err.Error())
	}
	fmt.Fprintf(r.log, "  control: %s in %s\n", strings.Join(ids, ", "), time.Since(start).Round(100*time.Millisecond))
	rows := controlRows(ids, recs, "no scenario record was written")
	rows[0].wall = time.Since(start).Round(100 * time.Millisecond).String()
	return rows
}

// controlName is the defect column of the control's rows.
const controlName = "(control: no defect)"

// controlIDs is the union of the selected defects' scenarios, in catalogue order.
func controlIDs(selected []plantedDefect) []string {
	var ids []string
	have := map[string]bool{}
	for _, d := range selected {
		for _, id := range d.scenarios() {
			if !have[id] {
				have[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// controlRows judges the control's record of each scenario (by id): it must exist (missing
// says why not) and have passed on the correct sandbox.
func controlRows(ids []string, recs map[string]*results.Scenario, missing string) []defectRow {
	var rows []defectRow
	for _, id := range ids {
		row := defectRow{defect: controlName, scenario: id, verdict: verdictControlOK}
		rec := recs[id]
		switch {
		case rec == nil:
			row.verdict, row.why = verdictControlBad, missing
		case rec.Status != results.StatusPassed:
			row.verdict, row.why = verdictControlBad, rec.Status+" "+rec.Reason
		}
		if rec != nil {
			row.dur = time.Duration(rec.DurationMS) * time.Millisecond
		}
		rows = append(rows, row)
	}
	return rows
}

// controlFromArchive is the control read from an earlier run's archive instead of a run of its
// own: the archive must come from the sandbox target with the correct sandbox of this checkout
// (its digest in run.json equals a fresh build's), and each declared scenario's record there
// is judged as the control run's would be. The test suite runs the acceptance scenarios once
// and hands that archive to the fast defects.
func (r *defectsRun) controlFromArchive(dir string, selected []plantedDefect) ([]defectRow, error) {
	recs, run, err := results.ReadArchive(dir)
	if err != nil {
		return nil, err
	}
	if run.Target != "sandbox" {
		return nil, fmt.Errorf("the archive ran on target %q; a control needs the sandbox", run.Target)
	}
	work := filepath.Join(r.work, "control")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	bin, err := r.build(work, "")
	if err != nil {
		return nil, fmt.Errorf("build the correct sandbox: %w", err)
	}
	want, err := results.FileSHA256(bin)
	if err != nil {
		return nil, err
	}
	if got := run.Environment[sandboxDigestKey]; got != want {
		if got == "" {
			got = "none recorded"
		}
		return nil, fmt.Errorf("the archive's sandbox (sha256 %s) is not the correct sandbox of this checkout (sha256 %s): run the control instead", got, want)
	}
	byID := map[string]*results.Scenario{}
	for _, rec := range recs {
		byID[rec.ID] = rec
	}
	rows := controlRows(controlIDs(selected), byID, "no scenario record in "+dir)
	if len(rows) > 0 {
		rows[0].wall = "archive"
	}
	fmt.Fprintf(r.log, "  control: %d scenarios from the archive %s\n", len(rows), dir)
	return rows, nil
}

// longestFirst estimates each defect's run time as the sum of its scenarios' expected
// durations: measured in a control taken from an archive, else estimated from the manifest's
// needs (runner.EstimatedDuration, as --shard does): a defect whose scenario waits for a lease
// to go stale starts before the short ones.
func longestFirst(selected []plantedDefect, control []defectRow, needs map[string]runner.Needs) []time.Duration {
	dur := map[string]time.Duration{}
	for _, row := range control {
		dur[row.scenario] = row.dur
	}
	est := make([]time.Duration, len(selected))
	for i, d := range selected {
		for _, id := range d.scenarios() {
			est[i] += runner.EstimatedDuration(needs[id], dur[id])
		}
	}
	return est
}

// sandboxDigestKey is run.json's environment entry naming the sandbox binary that ran.
const sandboxDigestKey = "sandbox_sha256"

// defect builds one broken sandbox, runs its scenarios and judges each record.
func (r *defectsRun) defect(d plantedDefect) []defectRow {
	start := time.Now()
	dir := filepath.Join(r.work, d.Name)
	rows := r.defectRows(d, dir)
	wall := time.Since(start).Round(100 * time.Millisecond)
	rows[0].wall = wall.String()
	fmt.Fprintf(r.log, "  %s: %s in %s\n", d.Name, verdictOf(d.Name, rows), wall)
	return rows
}

func (r *defectsRun) defectRows(d plantedDefect, dir string) []defectRow {
	escapedAll := func(why string) []defectRow {
		var rows []defectRow
		for _, id := range append(d.scenarios(), d.Awaiting...) {
			rows = append(rows, defectRow{defect: d.Name, scenario: id, verdict: verdictEscaped, why: why})
		}
		if len(rows) == 0 {
			rows = append(rows, defectRow{defect: d.Name, verdict: verdictEscaped, why: why})
		}
		return rows
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return escapedAll(err.Error())
	}
	var rows []defectRow
	if len(d.Catches) > 0 {
		bin, err := r.build(dir, d.tag())
		if err != nil {
			return escapedAll("build: " + err.Error())
		}
		recs, _, err := r.runScenarios(dir, bin, d.scenarios())
		if err != nil {
			return escapedAll(err.Error())
		}
		for _, c := range d.Catches {
			v, why, failing := judge(c, recs[c.Scenario])
			row := defectRow{defect: d.Name, scenario: c.Scenario, verdict: v, why: why, failing: failing}
			if rec := recs[c.Scenario]; rec != nil {
				row.dur = time.Duration(rec.DurationMS) * time.Millisecond
			}
			rows = append(rows, row)
		}
	}
	if len(d.Awaiting) > 0 && len(d.Catches) == 0 {
		rows = append(rows, defectRow{defect: d.Name, scenario: "(none implemented)", verdict: verdictNotCovered,
			failing: "awaiting " + strings.Join(d.Awaiting, ", ")})
	}
	// Unit tests that must fail on the defect: the proof below the scenarios, and the only
	// one for a defect no implemented scenario reaches yet.
	for _, u := range d.UnitTests {
		if r.ctx.Err() != nil {
			break // interrupted: no verdict to give
		}
		t0 := time.Now()
		failed, why := r.unitTests(d, u)
		row := defectRow{defect: d.Name, scenario: "go test " + u.Package, verdict: verdictCaught, dur: time.Since(t0)}
		if why != "" {
			row.verdict, row.why = verdictEscaped, why
		} else {
			row.failing = "--- FAIL: " + strings.Join(failed, ", ")
		}
		rows = append(rows, row)
	}
	return rows
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// unitTests runs `go test -tags defect_<name> -run '^(A|B)$' <pkg>` and requires every named
// test to fail.
func (r *defectsRun) unitTests(d plantedDefect, u defectUnit) (failed []string, why string) {
	names := make([]string, len(u.Tests))
	for i, t := range u.Tests {
		names[i] = regexp.QuoteMeta(t)
	}
	args := []string{"test", "-count=1", "-tags", d.tag(), "-run", "^(" + strings.Join(names, "|") + ")$", u.Package}
	cmd := exec.CommandContext(r.ctx, r.goBin, args...)
	cmd.Dir = r.root
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil, "the unit tests pass on the defect: " + strings.Join(u.Tests, ", ")
	}
	got := map[string]bool{}
	for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
		got[m[1]] = true
	}
	for _, t := range u.Tests {
		if !got[t] {
			return nil, fmt.Sprintf("%s did not fail (go test: %v; %s)", t, err, lastLinesOf(string(out), 2))
		}
		failed = append(failed, t)
	}
	return failed, ""
}

// excerpt cuts a long seen value down to the part around the declared text, so that the
// table shows why it counts (e.g. "…NO_CONFLICT (node FAILED/LOCK_CONFLICT, …").
func excerpt(seen, around string, ctx int) string {
	i := strings.Index(seen, around)
	if around == "" || i < 0 || len(seen) <= len(around)+2*ctx {
		return seen
	}
	start, end := max(0, i-ctx), min(len(seen), i+len(around)+ctx)
	for start > 0 && !utf8.RuneStart(seen[start]) {
		start--
	}
	for end < len(seen) && !utf8.RuneStart(seen[end]) {
		end++
	}
	out := seen[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(seen) {
		out += "…"
	}
	return out
}

func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return lastLinesOf(string(data), n)
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// oneLine collapses whitespace and cuts s to max runes for a table cell.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// writeDefectTable prints the table: defect, wall time, scenario, caught, the failing
// assertion seen (or why it escaped), scenario time.
func writeDefectTable(w io.Writer, rows []defectRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEFECT\tWALL\tSCENARIO\tCAUGHT\tTIME\tFAILING ASSERTION")
	last := ""
	for _, r := range rows {
		name := r.defect
		if name == last {
			name = ""
		}
		last = r.defect
		verdict, detail := r.verdict, r.failing
		if r.why != "" {
			verdict += " (" + oneLine(r.why, 90) + ")"
		}
		dur := ""
		if r.dur > 0 {
			dur = r.dur.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, r.wall, r.scenario, verdict, dur, oneLine(detail, 200))
	}
	tw.Flush()
}
