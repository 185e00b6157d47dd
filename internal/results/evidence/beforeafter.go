// Package evidence is the before/after evidence of a fix (`flowtest evidence`): the same
// scenarios in an archive of the code before and one of the code after, judged row by row,
// as a table (Markdown) and as JSON (schema/evidence.schema.json in package results).
package evidence

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"
)

// Statuses of a before/after evidence row (the incident practice's pass / fail / blocked /
// not run, plus the flag for a criterion that passed on both sides).
const (
	EvidencePass            = "pass"
	EvidenceFail            = "fail"
	EvidenceBlocked         = "blocked"
	EvidenceNotRun          = "not run"
	EvidenceNotDemonstrated = "does not demonstrate the fix"
)

// BeforeAfter is the evidence table of a fix: the same scenarios run on the code before and
// after it, one row per criterion.
type BeforeAfter struct {
	Before BeforeAfterRun   `json:"before"`
	After  BeforeAfterRun   `json:"after"`
	Rows   []BeforeAfterRow `json:"rows"`
}

// BeforeAfterRun describes one archive of the pair.
type BeforeAfterRun struct {
	Archive     string `json:"archive"`
	Revision    string `json:"revision"`
	Environment string `json:"environment"`
	Command     string `json:"command"`
	ExitCode    string `json:"exit_code"`
	State       string `json:"state"`
	target      string
	runner      string
}

// BeforeAfterRow is one criterion: a scenario, what it showed before and after, the verdict
// and the limits of the evidence.
type BeforeAfterRow struct {
	Criterion string          `json:"criterion"`
	Scenario  string          `json:"scenario"`
	Test      string          `json:"test"` // feature file:line
	Before    BeforeAfterSide `json:"before"`
	After     BeforeAfterSide `json:"after"`
	Status    string          `json:"status"`
	Limits    []string        `json:"limits"`
}

// BeforeAfterSide is one side of a row.
type BeforeAfterSide struct {
	Revision string `json:"revision"`
	Command  string `json:"command"`
	ExitCode string `json:"exit_code"`
	// Outcome is the scenario's status in that archive (passed, failed, blocked,
	// interrupted, not-run, or "absent" when the archive does not list it).
	Outcome string `json:"outcome"`
	// Observed is the failing assertion as "what: expected X, saw Y" (or the failing step,
	// or why it did not run); for a pass, how many assertions held.
	Observed string `json:"observed"`
	Record   string `json:"record"` // the scenario record's path
	steps    []string
}

// CompareArchives builds the evidence rows of a fix from the archive of a run on the code
// before it and one after. Every scenario that ran in either archive is a criterion. A row
// passes only when the scenario failed before and passes after; passing on both sides does
// not demonstrate the fix. limits holds the known limits of each scenario (the manifest's).
func CompareArchives(beforeDir, afterDir string, limits map[string]string) (*BeforeAfter, error) {
	// Each archive is verified first (links, integrity): evidence of a fix read from a record
	// that run.json contradicts would be evidence of nothing.
	bs, brun, err := results.ReadVerified(beforeDir)
	if err != nil {
		return nil, fmt.Errorf("--before: %w", err)
	}
	as, arun, err := results.ReadVerified(afterDir)
	if err != nil {
		return nil, fmt.Errorf("--after: %w", err)
	}
	ba := &BeforeAfter{Before: describeRun(beforeDir, brun), After: describeRun(afterDir, arun)}
	bIdx, aIdx := indexScenarios(bs), indexScenarios(as)
	var order []string
	seen := map[string]bool{}
	addOrder := func(run *results.Run, scen []*results.Scenario) {
		if run != nil {
			for _, id := range run.RunOrder {
				if !seen[id] {
					seen[id] = true
					order = append(order, id)
				}
			}
		}
		for _, s := range scen {
			if !seen[s.ID] {
				seen[s.ID] = true
				order = append(order, s.ID)
			}
		}
	}
	addOrder(arun, as)
	addOrder(brun, bs)
	for _, id := range order {
		b, a := bIdx[id], aIdx[id]
		if !ran(b) && !ran(a) {
			continue
		}
		row := BeforeAfterRow{Scenario: id}
		ref := a
		if ref == nil || !ran(a) {
			ref = b
		}
		row.Criterion = criterionOf(ref)
		if ref.FeatureFile != "" {
			row.Test = ref.FeatureFile
			if ref.Line > 0 {
				row.Test += fmt.Sprintf(":%d", ref.Line)
			}
		}
		row.Before = sideOf(ba.Before, beforeDir, b)
		row.After = sideOf(ba.After, afterDir, a)
		row.Status, row.Limits = judgeRow(row.Before, row.After)
		row.Limits = append(row.Limits, pairLimits(ba.Before, ba.After, row.Before, row.After)...)
		if l := limits[id]; l != "" {
			row.Limits = append(row.Limits, "scenario: "+l)
		}
		if len(row.Limits) == 0 {
			row.Limits = []string{}
		}
		ba.Rows = append(ba.Rows, row)
	}
	return ba, nil
}

func indexScenarios(scen []*results.Scenario) map[string]*results.Scenario {
	out := map[string]*results.Scenario{}
	for _, s := range scen {
		// A second record of the same id (a rerun inside one archive) wins: it is the later.
		if prev, ok := out[s.ID]; !ok || !s.Start.Before(prev.Start) {
			out[s.ID] = s
		}
	}
	return out
}

func ran(s *results.Scenario) bool { return s != nil && s.Status != results.StatusNotRun }

func criterionOf(s *results.Scenario) string {
	c := s.ID
	if acc := results.Acceptance(s.Tags); acc != "—" {
		c = "acceptance " + acc + " (" + s.ID + ")"
	}
	if s.Name != "" {
		c += ": " + s.Name
	}
	return c
}

func describeRun(dir string, run *results.Run) BeforeAfterRun {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	d := BeforeAfterRun{Archive: abs, Revision: "unknown (the run was not given --sut-commit)", Command: "not recorded", ExitCode: "not recorded", State: "unknown"}
	if run == nil {
		return d
	}
	if run.SUT.Commit != "" {
		d.Revision = run.SUT.Commit
		if run.SUT.Dirty {
			d.Revision += " (uncommitted changes)"
		}
	}
	env := []string{"target " + mdtext.OrDash(run.Target)}
	if run.Profile != "" {
		env = append(env, "profile "+run.Profile)
	}
	if run.OS != "" {
		env = append(env, run.OS)
	}
	if run.RunnerVersion != "" {
		env = append(env, "flowtest "+run.RunnerVersion)
	}
	for _, k := range slices.Sorted(maps.Keys(run.SUT.Versions)) {
		env = append(env, k+" "+run.SUT.Versions[k])
	}
	d.Environment = strings.Join(env, ", ")
	if len(run.Command) > 0 {
		d.Command = shellJoin(run.Command)
	}
	if run.ExitCode != nil {
		d.ExitCode = fmt.Sprint(*run.ExitCode)
	}
	d.State, d.target, d.runner = run.State, run.Target, run.RunnerVersion
	return d
}

func sideOf(run BeforeAfterRun, dir string, s *results.Scenario) BeforeAfterSide {
	side := BeforeAfterSide{Revision: run.Revision, Command: run.Command, ExitCode: run.ExitCode}
	if s == nil {
		side.Outcome, side.Observed, side.Record = "absent", "the archive has no record of it", "—"
		return side
	}
	side.Outcome = s.Status
	side.Record = filepath.Join(run.Archive, results.ScenarioDir, results.SanitizeLabel(s.ID)+".json")
	for _, st := range s.Steps {
		side.steps = append(side.steps, st.Text)
	}
	switch s.Status {
	case results.StatusPassed:
		held := 0
		for _, a := range s.Assertions {
			if a.OK {
				held++
			}
		}
		side.Observed = fmt.Sprintf("passed: %d/%d assertions held", held, len(s.Assertions))
	case results.StatusNotRun:
		side.Observed = "not run: " + mdtext.OrDash(s.Reason)
	default:
		side.Observed = s.Status + ": " + s.FirstObservation()
	}
	return side
}

// judgeRow: pass only when it failed before and passes after.
func judgeRow(b, a BeforeAfterSide) (string, []string) {
	switch a.Outcome {
	case "absent", results.StatusNotRun:
		return EvidenceNotRun, []string{"after: " + a.Observed}
	case results.StatusBlocked:
		return EvidenceBlocked, []string{"after: " + a.Observed}
	case results.StatusInterrupted:
		return EvidenceNotRun, []string{"after: the run was interrupted while it ran"}
	case results.StatusFailed:
		return EvidenceFail, nil
	}
	// Passed after.
	switch b.Outcome {
	case results.StatusFailed:
		return EvidencePass, nil
	case results.StatusPassed:
		return EvidenceNotDemonstrated, []string{"it passed before the fix as well: this criterion does not show that the fix changed anything"}
	case results.StatusBlocked:
		return EvidenceBlocked, []string{"before: " + b.Observed + " (no failing run before the fix)"}
	default:
		return EvidenceNotRun, []string{"before: " + b.Observed + " (no failing run before the fix)"}
	}
}

func pairLimits(br, ar BeforeAfterRun, b, a BeforeAfterSide) []string {
	var l []string
	if br.target != "" && ar.target != "" && br.target != ar.target {
		l = append(l, fmt.Sprintf("before ran on %s, after on %s", br.target, ar.target))
	} else if ar.target == "sandbox" {
		l = append(l, "sandbox: reference FlowNet, kSQL-Flow and kintone emulator, not the real SUT")
	}
	if br.Revision == ar.Revision && !strings.HasPrefix(br.Revision, "unknown") {
		l = append(l, "before and after name the same SUT revision: the difference is not in the SUT's commit")
	}
	if strings.HasPrefix(br.Revision, "unknown") || strings.HasPrefix(ar.Revision, "unknown") {
		l = append(l, "a revision is unknown (run without --sut-commit)")
	}
	if br.runner != "" && ar.runner != "" && br.runner != ar.runner {
		l = append(l, fmt.Sprintf("different flowtest versions (%s, %s)", br.runner, ar.runner))
	}
	if len(b.steps) > 0 && len(a.steps) > 0 && !slices.Equal(b.steps, a.steps) {
		l = append(l, "the scenario's steps differ between before and after: not the same test")
	}
	if br.State == results.RunInterrupted || ar.State == results.RunInterrupted {
		l = append(l, "one of the runs was interrupted")
	}
	return l
}

// shellJoin quotes argv for a POSIX shell where needed.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
		}) < 0 {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// Counts counts the rows by status.
func (ba *BeforeAfter) Counts() map[string]int {
	c := map[string]int{}
	for _, r := range ba.Rows {
		c[r.Status]++
	}
	return c
}

// Markdown renders the evidence as test-evidence.md: the two runs, then one row per
// criterion (Criterion / test, Before, After, Status, Limits).
func (ba *BeforeAfter) Markdown() []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Test evidence: before and after the fix\n\n")
	for _, side := range []struct {
		name string
		r    BeforeAfterRun
	}{{"Before", ba.Before}, {"After", ba.After}} {
		p("- **%s**: revision %s; %s; archive `%s`; command `%s`; exit code %s; run %s\n", side.name,
			mdtext.Inline(side.r.Revision), mdtext.Inline(mdtext.OrDash(side.r.Environment)), mdtext.Code(side.r.Archive), mdtext.Code(side.r.Command), side.r.ExitCode, side.r.State)
	}
	c := ba.Counts()
	p("- Rows: %d — %d pass, %d fail, %d blocked, %d not run, %d do not demonstrate the fix\n\n", len(ba.Rows),
		c[EvidencePass], c[EvidenceFail], c[EvidenceBlocked], c[EvidenceNotRun], c[EvidenceNotDemonstrated])
	p("A regression criterion is **pass** only when it failed before the fix and passes after it; passing on both sides does not demonstrate the fix. Not run and blocked are never pass.\n\n")
	p("| Criterion / test | Before | After | Status | Limits |\n| --- | --- | --- | --- | --- |\n")
	cell := func(s BeforeAfterSide) string {
		return fmt.Sprintf("%s<br>rev %s<br>exit %s<br>`%s`", mdtext.Cell(s.Observed), mdtext.Cell(s.Revision), s.ExitCode, mdtext.Cell(mdtext.Code(s.Record)))
	}
	for _, r := range ba.Rows {
		test := r.Criterion
		if r.Test != "" {
			test += "<br>`" + mdtext.Code(r.Test) + "`"
		}
		st := r.Status
		if st != EvidencePass {
			st = "**" + st + "**"
		}
		lim := "—"
		if len(r.Limits) > 0 {
			lim = strings.Join(r.Limits, "; ")
		}
		p("| %s | %s | %s | %s | %s |\n", mdtext.Cell(test), cell(r.Before), cell(r.After), st, mdtext.Cell(lim))
	}
	p("\nCommands: before `%s`; after `%s`.\n", mdtext.Code(ba.Before.Command), mdtext.Code(ba.After.Command))
	return b.Bytes()
}
