package defects

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/app/explorer"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// The explore catch mode: a race defect that the fixed timing of the suite never meets.
// Three runs prove it, each on the broken sandbox:
//
//  1. `flowtest run` of the scenario passes: the fixed suite misses the defect (declared,
//     and shown on every `flowtest defects`, so that a scenario which starts catching it by
//     its ordinary timing is noticed: the defect then belongs under `catches`). An entry
//     declared `run: either` is of a free race whose run may meet the defect by chance (no
//     barrier forces its order): its run may pass or fail the declared way, and the catch
//     rests on the exploration (proofs 2 to 5);
//  2. `flowtest explore` of the scenario with the declared strategy, seed and budget finds a
//     schedule failing the declared way — the scenario's first failing assertion (and its
//     seen value), or an invariant — without a crash of any process (the crash rule);
//  3. `flowtest explore --replay` of that failure's shrunk schedule fails the same way;
//  4. and 5. the scenario generated for that schedule, added to a copy of the suite, fails
//     the same way under `flowtest run` on the broken sandbox and passes on the correct one
//     (generated.go).

// ExploreCatch is a defect's `explore:` entry.
type ExploreCatch struct {
	Scenario string `yaml:"scenario"`
	// Strategy, Seed, Depth (pct) and Bound (dfs) are the exploration's; Schedules its
	// budget: the defect must be found within it.
	Strategy  string  `yaml:"strategy"`
	Seed      *uint64 `yaml:"seed"`
	Depth     int     `yaml:"depth"`
	Bound     *int    `yaml:"bound"`
	Schedules int     `yaml:"schedules"`
	// Assertion (with Seen) is how the failing schedule's scenario fails, as in a catch;
	// Invariant instead names the invariant it breaks.
	Assertion     string   `yaml:"assertion"`
	Seen          string   `yaml:"seen"`
	Invariant     string   `yaml:"invariant"`
	ExpectedCodes []string `yaml:"expected_codes"`
	// Run is what `flowtest run` of the scenario may do on the broken sandbox: RunMissed
	// (the default) or RunEither.
	Run string `yaml:"run"`
	// RunInvariant, with `run: either`, names the invariant by which `flowtest run` (which
	// checks the contract's invariants after every scenario) may also catch the defect where
	// the free race did not meet it but the run still made the broken write: the run passes,
	// fails the declared way, or fails first with the assertion "invariant <RunInvariant>".
	// The exploration still proves that the explorer finds the race's own failure.
	RunInvariant string `yaml:"run_invariant"`
}

// The values of an explore catch's `run:`.
const (
	RunMissed = "missed" // the run passes: the fixed suite misses the defect
	RunEither = "either" // the run passes or fails the declared way, by the chance of a free race
)

// The command's own defaults for a strategy parameter the entry leaves out.
const (
	defaultDepth = 3
	defaultBound = 2
)

func (x *ExploreCatch) depth() int {
	if x.Depth > 0 {
		return x.Depth
	}
	return defaultDepth
}

func (x *ExploreCatch) bound() int {
	if x.Bound != nil {
		return *x.Bound
	}
	return defaultBound
}

// args are the exploration's flags.
func (x *ExploreCatch) args() []string {
	return []string{"--schedules", strconv.Itoa(x.Schedules), "--strategy", x.Strategy, "--seed", strconv.FormatUint(*x.Seed, 10),
		"--depth", strconv.Itoa(x.depth()), "--bound", strconv.Itoa(x.bound())}
}

func (x *ExploreCatch) check(known map[string]bool) error {
	switch {
	case x.Scenario == "":
		return errors.New("names no scenario")
	case known != nil && !known[x.Scenario]:
		return fmt.Errorf("scenario %s is not in the manifest", x.Scenario)
	case x.Seed == nil:
		return errors.New("needs a seed: the same seed must find it again")
	case x.Schedules < 1:
		return errors.New("needs a budget of at least one schedule")
	case (x.Assertion == "") == (x.Invariant == ""):
		return errors.New("names either the failing assertion or the invariant the schedule breaks, not both or neither")
	case x.Seen != "" && x.Assertion == "":
		return errors.New("seen pins an assertion's seen value; there is no assertion")
	case x.Run != "" && x.Run != RunMissed && x.Run != RunEither:
		return fmt.Errorf("run: %q is neither %s nor %s", x.Run, RunMissed, RunEither)
	case x.Run == RunEither && x.Invariant != "":
		return errors.New("run: either needs the failing assertion: a run judges assertions, not the explorer's invariants")
	case x.RunInvariant != "" && x.Run != RunEither:
		return errors.New("run_invariant is how a run of a free race (run: either) fails when the race did not meet the defect")
	case x.RunInvariant != "" && !schedule.Known(x.RunInvariant):
		return fmt.Errorf("run_invariant %q is not one of %s", x.RunInvariant, strings.Join(schedule.Names(), ", "))
	}
	if _, err := schedule.NewStrategy(x.Strategy, *x.Seed, x.depth(), x.bound()); err != nil {
		return err
	}
	if x.Invariant != "" {
		var names []string
		for _, inv := range schedule.Invariants {
			if inv.Name == x.Invariant {
				names = nil
				break
			}
			names = append(names, inv.Name)
		}
		if names != nil {
			return fmt.Errorf("invariant %q is not one of %s", x.Invariant, strings.Join(names, ", "))
		}
	}
	for _, code := range x.ExpectedCodes {
		if !crashCodes[code] && !kintoneErrorCode.MatchString(code) {
			return fmt.Errorf("expected code %q is not one the crash rule takes for a crash: nothing to exempt", code)
		}
	}
	return nil
}

// CheckExplorable refuses an explore catch whose scenario the manifest does not declare
// explorable (explorable: the ids with an `explore:` entry).
func CheckExplorable(all []Defect, explorable map[string]bool) error {
	for _, d := range all {
		if d.Explore != nil && !explorable[d.Explore.Scenario] {
			return fmt.Errorf("defect %s: explore: scenario %s is not declared explorable (its manifest entry has no explore: {processes: [...]})", d.Name, d.Explore.Scenario)
		}
	}
	return nil
}

// matches says whether a failing schedule failed the declared way.
func (x *ExploreCatch) matches(s explorer.ScheduleRun) bool {
	if x.Invariant != "" {
		for _, v := range s.Violations {
			if v.Invariant == x.Invariant {
				return true
			}
		}
		return false
	}
	return strings.Contains(s.Assertion, x.Assertion) && (x.Seen == "" || strings.Contains(s.Reason, x.Seen))
}

// exploreRows runs the three proofs of d's explore catch on the broken sandbox bin.
func (r *Run) exploreRows(d Defect, dir, bin string) []Row {
	x := d.Explore
	id := x.Scenario
	rows := []Row{r.missedByRun(d, filepath.Join(dir, "explore-run"), bin)}
	row := Row{defect: d.Name, Scenario: "explore " + id, Verdict: VerdictEscaped}
	t0 := time.Now()
	rep, exploreDir, err := r.explore(filepath.Join(dir, "explore"), bin, id, x.args()...)
	row.dur = time.Since(t0)
	if err != nil {
		row.Why = err.Error()
		return append(rows, row)
	}
	v, ok := firstMatching(x, rep)
	if !ok {
		row.Why = fmt.Sprintf("not found in %d schedules (%s, seed %d): %d failing, none the declared way (%s)", rep.SchedulesRun, rep.Strategy, *x.Seed, len(rep.Violations), x.want())
		return append(rows, row)
	}
	if why := r.crashed(x, exploreDir, v.Schedule.Archive); why != "" {
		row.Why = fmt.Sprintf("schedule %d crashed: %s", v.Schedule.N, why)
		return append(rows, row)
	}
	row.Verdict = VerdictCaught
	row.failing = fmt.Sprintf("found at schedule %d of %d (%s, seed %d; %d distinct orders), shrunk %d → %d releases: %s",
		v.Schedule.N, rep.SchedulesRun, rep.Strategy, *x.Seed, rep.DistinctOrder, v.ShrunkFrom, len(v.Replay), failingOf(x, v.Schedule))
	rows = append(rows, row)

	replay := Row{defect: d.Name, Scenario: "replay " + id, Verdict: VerdictEscaped}
	t0 = time.Now()
	again, againDir, err := r.explore(filepath.Join(dir, "replay"), bin, id, "--replay", filepath.Join(exploreDir, filepath.FromSlash(v.File)))
	replay.dur = time.Since(t0)
	switch {
	case err != nil:
		replay.Why = err.Error()
	case len(again.Schedules) != 1:
		replay.Why = fmt.Sprintf("the replay ran %d schedules, not 1", len(again.Schedules))
	case again.Schedules[0].Failure() != v.Schedule.Failure() || !x.matches(again.Schedules[0]):
		s := again.Schedules[0]
		replay.Why = fmt.Sprintf("the replay of %s did not fail the same way: %s (wanted %s)", v.File, orPassed(s), v.Schedule.Failure())
	default:
		if why := r.crashed(x, againDir, again.Schedules[0].Archive); why != "" {
			replay.Why = "the replay crashed: " + why
			break
		}
		replay.Verdict = VerdictCaught
		replay.failing = fmt.Sprintf("%s (%d releases) fails the same way: %s", v.File, len(v.Replay), again.Schedules[0].Failure())
	}
	rows = append(rows, replay)
	if r.Ctx.Err() != nil {
		return rows
	}
	return append(rows, r.generatedRows(d, dir, bin, exploreDir, v)...)
}

// asCatch is the entry's failing assertion as a catch of its scenario.
func (x *ExploreCatch) asCatch() Catch {
	return Catch{Scenario: x.Scenario, Assertion: x.Assertion, Seen: x.Seen, ExpectedCodes: x.ExpectedCodes}
}

func (x *ExploreCatch) want() string {
	if x.Invariant != "" {
		return "invariant " + x.Invariant
	}
	if x.Seen != "" {
		return fmt.Sprintf("assertion %q seeing %q", x.Assertion, x.Seen)
	}
	return fmt.Sprintf("assertion %q", x.Assertion)
}

func orPassed(s explorer.ScheduleRun) string {
	if s.Passed && len(s.Violations) == 0 {
		return "it passed"
	}
	return s.Failure()
}

// failingOf is a failing schedule's failure for the table, the declared way: the declared
// invariant's details, or the scenario's failure line from the assertion on.
func failingOf(x *ExploreCatch, s explorer.ScheduleRun) string {
	if x.Invariant != "" {
		for _, v := range s.Violations {
			if v.Invariant == x.Invariant {
				return v.Invariant + ": " + v.Detail
			}
		}
	}
	if _, after, ok := strings.Cut(s.Reason, "failed: "+s.Assertion); ok && s.Assertion != "" {
		return s.Assertion + after
	}
	return s.Reason
}

// firstMatching is the first violating schedule that failed the declared way. The explorer
// shrinks the first schedule of each way of failing, so that is the shrunk one.
func firstMatching(x *ExploreCatch, rep *explorer.Report) (explorer.Violating, bool) {
	for _, v := range rep.Violations {
		if x.matches(v.Schedule) {
			return v, true
		}
	}
	return explorer.Violating{}, false
}

// missedByRun is the first proof: `flowtest run` of the scenario on the broken sandbox
// passes (or, declared `run: either`, passes or fails the declared way).
func (r *Run) missedByRun(d Defect, dir, bin string) Row {
	id := d.Explore.Scenario
	row := Row{defect: d.Name, Scenario: id + " (flowtest run)", Verdict: VerdictEscaped}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		row.Why = err.Error()
		return row
	}
	recs, _, err := r.runScenarios(dir, bin, []string{id})
	rec := recs[id]
	switch {
	case err != nil:
		row.Why = err.Error()
	case rec == nil:
		row.Why = "no scenario record was written"
	case rec.Status != results.StatusPassed && d.Explore.Run == RunEither:
		v, why, failing := judge(d.Explore.asCatch(), rec)
		if inv := d.Explore.RunInvariant; v != VerdictCaught && inv != "" {
			inv = schedule.AssertionPrefix + inv
			if v, why, failing = judge(Catch{Scenario: id, Assertion: inv, ExpectedCodes: d.Explore.ExpectedCodes}, rec); v == VerdictCaught {
				row.Verdict = VerdictMetByRun
				row.failing = "flowtest run catches it by its invariant check (run_invariant), the race not met: " + failing
				break
			}
		}
		if v != VerdictCaught {
			row.Why = "flowtest run fails it, not the declared way: " + why
			row.failing = failing
			break
		}
		row.Verdict = VerdictMetByRun
		row.failing = "flowtest run met it by the chance of the free race (run: either): " + failing
	case rec.Status != results.StatusPassed:
		row.Why = fmt.Sprintf("flowtest run already fails it (%s): declare it under catches, it is no race the suite misses", rec.Status)
		row.failing = excerptOf(rec.Reason)
	default:
		row.Verdict = VerdictMissed
		row.failing = "flowtest run passes it: the fixed suite misses it"
		if d.Explore.Run == RunEither {
			row.failing = "flowtest run passes it: its free race did not meet it this time (run: either)"
		}
	}
	if rec != nil {
		row.dur = time.Duration(rec.DurationMS) * time.Millisecond
	}
	return row
}

func excerptOf(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// crashed applies the crash rule to the scenario record of a schedule's run archive.
func (r *Run) crashed(x *ExploreCatch, exploreDir, archive string) string {
	path := filepath.Join(exploreDir, filepath.FromSlash(archive), "scenarios", x.Scenario+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		return "no scenario record of the schedule: " + err.Error()
	}
	var rec results.Scenario
	if err := json.Unmarshal(data, &rec); err != nil {
		return fmt.Sprintf("scenario record %s: %v", path, err)
	}
	return crashOf(&rec, x.ExpectedCodes)
}

// explore runs `flowtest explore <id> args…` on the broken sandbox into dir and reads the
// exploration's report. Exit 1 (a schedule failed) is what a catch expects; a refusal is
// an error, and so is a run whose report was not written.
func (r *Run) explore(dir, bin, id string, args ...string) (*explorer.Report, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	out := filepath.Join(dir, "archive")
	logPath := filepath.Join(dir, "explore.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	defer logf.Close()
	argv := append([]string{"explore", id}, args...)
	argv = append(argv, "--product", "reference", "--sandbox-bin", bin, "--out", out, "--features", filepath.Join(r.Root, "features"), "--lock-dir", filepath.Join(dir, "lock"))
	err = proc.RunBound(r.selfCommand(logf, argv...))
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == runner.ExitRefused:
		return nil, "", fmt.Errorf("flowtest explore refused (exit 2): %s", lastLinesOfFile(logPath, 3))
	case err != nil && !errors.As(err, &ee):
		return nil, "", fmt.Errorf("flowtest explore: %w", err)
	}
	matches, _ := filepath.Glob(filepath.Join(out, "*", "*", "explore.json"))
	if len(matches) != 1 {
		return nil, "", fmt.Errorf("flowtest explore wrote %d reports (exit %v): %s", len(matches), err, lastLinesOfFile(logPath, 3))
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		return nil, "", err
	}
	var rep explorer.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, "", fmt.Errorf("%s: %w", matches[0], err)
	}
	return &rep, filepath.Dir(matches[0]), nil
}

// exploreControls explore each distinct exploration of the selected race defects on the
// correct sandbox bin: a schedule that fails there proves nothing about a defect. (A
// control taken from an archive has no exploration: --control-from covers the runs only.)
func (r *Run) exploreControls(dir, bin string, selected []Defect) []Row {
	var rows []Row
	done := map[string]bool{}
	for i, d := range selected {
		x := d.Explore
		if x == nil || r.Ctx.Err() != nil {
			continue
		}
		args := x.args()
		key := x.Scenario + " " + strings.Join(args, " ")
		if done[key] {
			continue
		}
		done[key] = true
		row := Row{defect: controlName, Scenario: fmt.Sprintf("explore %s (%s, seed %d, %d schedules)", x.Scenario, x.Strategy, *x.Seed, x.Schedules), Verdict: VerdictControlBad}
		t0 := time.Now()
		rep, _, err := r.explore(filepath.Join(dir, fmt.Sprintf("explore-%d", i)), bin, x.Scenario, args...)
		row.dur = time.Since(t0)
		switch {
		case err != nil:
			row.Why = err.Error()
		case len(rep.Violations) > 0:
			s := rep.Violations[0].Schedule
			row.Why = fmt.Sprintf("%d of %d schedules fail on the correct sandbox, first schedule %d: %s", len(rep.Violations), rep.SchedulesRun, s.N, s.Failure())
		default:
			row.Verdict = VerdictControlOK
			row.failing = fmt.Sprintf("%d schedules, %d distinct orders, branches %s: no failure", rep.SchedulesRun, rep.DistinctOrder, branches(rep.Branches))
		}
		rows = append(rows, row)
	}
	return rows
}

func branches(m map[string]int) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s ×%d", n, m[n])
	}
	return strings.Join(parts, ", ")
}

// exploreEstimate is an explore catch's expected time: its schedules about six at once
// (the sandbox's concurrency on two cores), a shrink, a replay and the generated scenario's
// two runs, each a run of the scenario, and the run that misses it.
func exploreEstimate(x *ExploreCatch, scenario time.Duration) time.Duration {
	return scenario * time.Duration(x.Schedules/6+shrinkRunsEstimate+4)
}

// shrinkRunsEstimate is about what a shrink costs in runs (the command's --shrink-runs is 12).
const shrinkRunsEstimate = 8
