// Package defects is the proof that every implemented scenario can fail. For each
// planted defect of internal/sandbox/defect/defects.yaml it builds a broken flowsandbox
// (`go build -tags defect_<name>`), runs the scenarios that must catch it with this very
// executable (`flowtest run --sandbox-bin …`), and reads their records: a defect is caught
// only when each declared scenario failed on the declared assertion while every process it
// started reached a normal end. A crash (see crashOf), a timeout or any other failure
// elsewhere is reported as ESCAPED, with what failed instead. It runs `go build` from the
// source tree, which a package of its own keeps out of the command's glue.
package defects

import (
	"context"
	"encoding/json"
	"errors"
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
	"time"

	"github.com/ksqlflow/flowtest/internal/base/excerpt"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// Run is one `flowtest defects` invocation: the module root it builds from, the go command,
// the flowtest executable that runs the scenarios, its work dir, where progress goes and the
// context that stops it.
type Run struct {
	Root, GoBin, Self, Work string
	Log                     io.Writer
	Ctx                     context.Context
	correct                 lazyBin // the correct sandbox (generated.go)
}

// DefaultJobs: the runs mostly wait (emulated kintone latency, long reads), so a few
// at once fit two cores; the table is in catalogue order whatever the finishing order.
const DefaultJobs = 3

// all runs the control (if asked) and every selected defect, up to jobs at once, and returns
// their rows in catalogue order (control first). Each run has its own work dir, sandbox
// binary, emulator and run lock directory, so the runs cannot see each other.
//
// est, when not nil, estimates each selected defect's run time: the longest start first, so
// that a long one does not start last and stretch the wall time alone.
func (r *Run) All(selected []Defect, control bool, jobs int, est []time.Duration) []Row {
	type task func() []Row
	var tasks []task
	if control {
		tasks = append(tasks, func() []Row { return r.control(selected) })
	}
	for _, d := range selected {
		tasks = append(tasks, func() []Row { return r.defect(d) })
	}
	out := make([][]Row, len(tasks))
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
		if r.Ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if r.Ctx.Err() == nil {
				out[i] = t()
			}
		}()
	}
	wg.Wait()
	var rows []Row
	for _, rs := range out {
		rows = append(rows, rs...)
	}
	return rows
}

// ModuleRoot is the directory of this module's go.mod, found by the go command from the
// working directory: the broken sandboxes are built from source.
func ModuleRoot(goBin string) (string, error) {
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
func (r *Run) build(dir, tags string) (string, error) {
	bin := filepath.Join(dir, "flowsandbox")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	args := []string{"build"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	args = append(args, "-o", bin, "./cmd/flowsandbox")
	cmd := exec.CommandContext(r.Ctx, r.GoBin, args...)
	cmd.Dir = r.Root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", r.GoBin, strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// selfCommand is this executable with argv, run in the root, its output into log. An
// interrupt is passed on so that the run cleans up and stops its emulator; a kill would
// orphan it.
func (r *Run) selfCommand(log io.Writer, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(r.Ctx, r.Self, argv...)
	cmd.Dir = r.Root
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Cancel = func() error {
		if runtime.GOOS == "windows" {
			return cmd.Process.Kill()
		}
		return cmd.Process.Signal(os.Interrupt)
	}
	cmd.WaitDelay = time.Minute
	return cmd
}

// runScenarios runs `flowtest run` (this executable) on the given sandbox binary and returns
// the records of the scenarios, by id, plus the run's exit code.
func (r *Run) runScenarios(dir, bin string, ids []string) (map[string]*results.Scenario, int, error) {
	return r.runScenariosIn(dir, bin, filepath.Join(r.Root, "features"), ids)
}

// runScenariosIn is runScenarios with the feature files, manifest and fixtures of features.
func (r *Run) runScenariosIn(dir, bin, features string, ids []string) (map[string]*results.Scenario, int, error) {
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
	// --product reference: a planted defect breaks the reference FlowNet, the default
	// (auto) would drive the real one.
	err = proc.RunBound(r.selfCommand(logf, "run", "--product", "reference", "--sandbox-bin", bin, "--tags", strings.Join(tags, " or "), "--out", out,
		"--features", features, "--lock-dir", filepath.Join(dir, "lock"))) // a killed `flowtest defects` takes its runner along
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return nil, 0, fmt.Errorf("flowtest run: %w", err)
	}
	if code == runner.ExitRefused {
		return nil, code, fmt.Errorf("flowtest run refused (exit 2): %s", lastLinesOfFile(logPath, 3))
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
func (r *Run) control(selected []Defect) []Row {
	ids := controlIDs(selected)
	if len(ids) == 0 {
		return nil
	}
	start := time.Now()
	fail := func(why string) []Row {
		return []Row{{defect: controlName, wall: time.Since(start).Round(100 * time.Millisecond).String(), Scenario: strings.Join(ids, ", "), Verdict: VerdictControlBad, Why: why}}
	}
	dir := filepath.Join(r.Work, "control")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err.Error())
	}
	bin, err := r.correctSandbox()
	if err != nil {
		return fail(err.Error())
	}
	recs, _, err := r.runScenarios(dir, bin, ids)
	if err != nil {
		return fail(err.Error())
	}
	rows := controlRows(ids, recs, "no scenario record was written")
	rows = append(rows, r.exploreControls(dir, bin, selected)...)
	fmt.Fprintf(r.Log, "  control: %s in %s\n", strings.Join(ids, ", "), time.Since(start).Round(100*time.Millisecond))
	rows[0].wall = time.Since(start).Round(100 * time.Millisecond).String()
	return rows
}

// controlName is the defect column of the control's rows.
const controlName = "(control: no defect)"

// controlIDs is the union of the selected defects' scenarios, in catalogue order.
func controlIDs(selected []Defect) []string {
	var ids []string
	have := map[string]bool{}
	for _, d := range selected {
		scen := d.scenarios()
		if d.Explore != nil {
			scen = append(scen, d.Explore.Scenario)
		}
		for _, id := range scen {
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
func controlRows(ids []string, recs map[string]*results.Scenario, missing string) []Row {
	var rows []Row
	for _, id := range ids {
		row := Row{defect: controlName, Scenario: id, Verdict: VerdictControlOK}
		rec := recs[id]
		switch {
		case rec == nil:
			row.Verdict, row.Why = VerdictControlBad, missing
		case rec.Status != results.StatusPassed:
			row.Verdict, row.Why = VerdictControlBad, rec.Status+" "+rec.Reason
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
func (r *Run) ControlFromArchive(dir string, selected []Defect) ([]Row, error) {
	recs, run, err := results.ReadArchive(dir)
	if err != nil {
		return nil, err
	}
	if run.Target != "sandbox" {
		return nil, fmt.Errorf("the archive ran on target %q; a control needs the sandbox", run.Target)
	}
	// The planted defects break the reference FlowNet: a control run on the real product
	// says nothing of the model they break.
	if run.Product != nil && run.Product.Kind != results.ProductReference {
		return nil, fmt.Errorf("the archive drove the %s FlowNet; a control needs the reference (flowtest run --product reference)", run.Product.Kind)
	}
	work := filepath.Join(r.Work, "control")
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
	if got := run.Environment[SandboxDigestKey]; got != want {
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
	fmt.Fprintf(r.Log, "  control: %d scenarios from the archive %s\n", len(rows), dir)
	return rows, nil
}

// LongestFirst estimates each defect's run time as the sum of its scenarios' expected
// durations: measured in a control taken from an archive, else estimated from the manifest's
// needs (runner.EstimatedDuration, as --shard does): a defect whose scenario waits for a lease
// to go stale starts before the short ones.
func LongestFirst(selected []Defect, control []Row, needs map[string]runner.Needs) []time.Duration {
	dur := map[string]time.Duration{}
	for _, row := range control {
		dur[row.Scenario] = row.dur
	}
	est := make([]time.Duration, len(selected))
	for i, d := range selected {
		for _, id := range d.scenarios() {
			est[i] += runner.EstimatedDuration(needs[id], dur[id])
		}
		if x := d.Explore; x != nil {
			est[i] += exploreEstimate(x, runner.EstimatedDuration(needs[x.Scenario], dur[x.Scenario]))
		}
	}
	return est
}

// SandboxDigestKey is run.json's environment entry naming the sandbox binary that ran.
const SandboxDigestKey = "sandbox_sha256"

// defect builds one broken sandbox, runs its scenarios and judges each record.
func (r *Run) defect(d Defect) []Row {
	start := time.Now()
	dir := filepath.Join(r.Work, d.Name)
	rows := r.defectRows(d, dir)
	wall := time.Since(start).Round(100 * time.Millisecond)
	rows[0].wall = wall.String()
	fmt.Fprintf(r.Log, "  %s: %s in %s\n", d.Name, VerdictOf(d.Name, rows), wall)
	return rows
}

func (r *Run) defectRows(d Defect, dir string) []Row {
	escapedAll := func(why string) []Row {
		var rows []Row
		ids := append(d.scenarios(), d.Awaiting...)
		if d.Explore != nil {
			ids = append(ids, "explore "+d.Explore.Scenario)
		}
		for _, id := range ids {
			rows = append(rows, Row{defect: d.Name, Scenario: id, Verdict: VerdictEscaped, Why: why})
		}
		if len(rows) == 0 {
			rows = append(rows, Row{defect: d.Name, Verdict: VerdictEscaped, Why: why})
		}
		return rows
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return escapedAll(err.Error())
	}
	var rows []Row
	var bin string
	if len(d.Catches) > 0 || d.Explore != nil {
		var err error
		if bin, err = r.build(dir, d.tag()); err != nil {
			return escapedAll("build: " + err.Error())
		}
	}
	if len(d.Catches) > 0 {
		recs, _, err := r.runScenarios(dir, bin, d.scenarios())
		if err != nil {
			return escapedAll(err.Error())
		}
		for _, c := range d.Catches {
			v, why, failing := judge(c, recs[c.Scenario])
			row := Row{defect: d.Name, Scenario: c.Scenario, Verdict: v, Why: why, failing: failing}
			if rec := recs[c.Scenario]; rec != nil {
				row.dur = time.Duration(rec.DurationMS) * time.Millisecond
			}
			rows = append(rows, row)
		}
	}
	if d.Explore != nil && r.Ctx.Err() == nil {
		rows = append(rows, r.exploreRows(d, dir, bin)...)
	}
	if x := d.exploreNotRun; x != nil {
		rows = append(rows, Row{defect: d.Name, Scenario: "explore " + x.Scenario, Verdict: VerdictNotRun,
			failing: "--fast proves it by its catches; its exploration runs in the full catalogue (make defects)"})
	}
	if len(d.Awaiting) > 0 && len(d.Catches) == 0 {
		rows = append(rows, Row{defect: d.Name, Scenario: "(none implemented)", Verdict: VerdictNotCovered,
			failing: "awaiting " + strings.Join(d.Awaiting, ", ")})
	}
	// Unit tests that must fail on the defect: the proof below the scenarios, and the only
	// one for a defect no implemented scenario reaches yet.
	for _, u := range d.UnitTests {
		if r.Ctx.Err() != nil {
			break // interrupted: no verdict to give
		}
		t0 := time.Now()
		failed, why := r.unitTests(d, u)
		row := Row{defect: d.Name, Scenario: "go test " + u.Package, Verdict: VerdictCaught, dur: time.Since(t0)}
		if why != "" {
			row.Verdict, row.Why = VerdictEscaped, why
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
func (r *Run) unitTests(d Defect, u defectUnit) (failed []string, why string) {
	names := make([]string, len(u.Tests))
	for i, t := range u.Tests {
		names[i] = regexp.QuoteMeta(t)
	}
	args := []string{"test", "-count=1", "-tags", d.tag(), "-run", "^(" + strings.Join(names, "|") + ")$", u.Package}
	cmd := exec.CommandContext(r.Ctx, r.GoBin, args...)
	cmd.Dir = r.Root
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
			return nil, fmt.Sprintf("%s did not fail (go test: %v; %s)", t, err, excerpt.LastLines(string(out), 2))
		}
		failed = append(failed, t)
	}
	return failed, ""
}

// lastLinesOfFile is excerpt.LastLines of a file, or why it cannot be read.
func lastLinesOfFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return excerpt.LastLines(string(data), n)
}
