package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// Acceptance lists the acceptance numbers from @acc-N tags.
func Acceptance(tags []string) string {
	var acc []string
	for _, t := range tags {
		t = strings.TrimPrefix(t, "@")
		if strings.HasPrefix(t, "acc-") {
			acc = append(acc, strings.TrimPrefix(t, "acc-"))
		}
	}
	return mdtext.OrDash(strings.Join(acc, ", "))
}

// TotalsText is the one-line count of a run's scenarios. "failed" counts the failures no
// known product defect excuses; those it excuses are counted apart ("1 known product
// defect"), as are passes under a known defect that no longer reproduces.
func TotalsText(t record.Totals) string { return totalsLine(t, nil, nil) }

// RunTotalsText is TotalsText naming the known defects: "62 passed, 0 failed, 1 known
// product defect (KPD-1), 0 not run, of 63".
func RunTotalsText(run *record.Run) string {
	return totalsLine(run.Totals, record.KnownDefectIDs(run.Scenarios, record.KDReproduced), record.KnownDefectIDs(run.Scenarios, record.KDNoLongerReproduces))
}

func totalsLine(t record.Totals, kpd, stale []string) string {
	ids := func(l []string) string {
		if len(l) == 0 {
			return ""
		}
		return " (" + strings.Join(l, ", ") + ")"
	}
	passed := fmt.Sprintf("%d passed", t.Passed)
	if t.KnownDefectsNotReproduced > 0 {
		passed += fmt.Sprintf(" (%d known product defect(s) no longer reproduce%s: update the catalogue)", t.KnownDefectsNotReproduced, ids(stale))
	}
	parts := []string{passed, fmt.Sprintf("%d failed", t.Failed-t.KnownDefects)}
	if t.KnownDefects == 1 {
		parts = append(parts, "1 known product defect"+ids(kpd))
	} else if t.KnownDefects > 1 {
		parts = append(parts, fmt.Sprintf("%d known product defects%s", t.KnownDefects, ids(kpd)))
	}
	if t.Blocked > 0 {
		parts = append(parts, fmt.Sprintf("%d blocked", t.Blocked))
	}
	if t.Interrupted > 0 {
		parts = append(parts, fmt.Sprintf("%d interrupted", t.Interrupted))
	}
	parts = append(parts, fmt.Sprintf("%d not run", t.NotRun))
	of := fmt.Sprintf(", of %d", t.Total)
	if t.Extended > 0 {
		of += fmt.Sprintf(" (%d acceptance, %d extended)", t.Total-t.Extended, t.Extended)
	}
	return strings.Join(parts, ", ") + of
}

func notRunText(cat string) string {
	switch cat {
	case record.NotRunTag:
		return "filtered by tag"
	case record.NotRunPlatform:
		return "other platform"
	case record.NotRunNotImplemented:
		return "not implemented"
	case record.NotRunInterrupted:
		return "interrupted"
	case "":
		return "not run"
	}
	return cat
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func fmtDur(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// View is what the acceptance record shows of a run, decided once: the README
// (fmt_readme.go) and the page (fmt_html.go) render the same sections from it, each in its
// own markup, so that a section's content (which rows, in which order, which words) cannot
// drift between the two. run and scen are redacted already.
type View struct {
	run      *record.Run
	title    string
	duration time.Duration
	totals   string
	gate     *record.GateRecord
	records  map[string]*record.Scenario // by id, for the results table
	scen     []*record.Scenario          // the records in run order
	notRun   []record.ScenarioSummary    // every summary not run, in run order
}

// NewView decides the view of run with its written records and its gate record (nil for none).
func NewView(run *record.Run, scen []*record.Scenario, gate *record.GateRecord) *View {
	v := &View{run: run, title: run.Label, duration: run.End.Sub(run.Start), totals: RunTotalsText(run),
		gate: gate, records: map[string]*record.Scenario{}, scen: scen}
	if v.title == "" {
		v.title = "all"
	}
	for _, s := range scen {
		v.records[s.ID] = s
	}
	for _, s := range run.Scenarios {
		if s.Status == record.StatusNotRun {
			v.notRun = append(v.notRun, s)
		}
	}
	return v
}

// notRunHeader and notRunRows are the "Not run" table of both pages: the scenario, why it did
// not run and the detail.
var notRunHeader = []string{"Scenario", "Why", "Detail"}

func (v *View) notRunRows() [][]string {
	var rows [][]string
	for _, s := range v.notRun {
		rows = append(rows, []string{s.ID, notRunText(s.NotRunCategory), mdtext.OrDash(s.Reason)})
	}
	return rows
}

// envRow is one row of the environment table; rows with an empty value are not shown.
type envRow struct{ key, value string }

// environment is the environment table. The page shows the command line and the commit
// alone; the README, which is read without run.json at hand, says where the commit came from
// and whether the checkout was dirty.
func (v *View) environment(withCommand, commitDetail bool) []envRow {
	run := v.run
	rows := []envRow{{"Target", run.Target}, {"Profile", run.Profile}, {"OS", run.OS}, {"Runner version", run.RunnerVersion},
		{"Tag expression", mdtext.OrDash(run.TagExpression)}}
	if withCommand {
		rows = append(rows, envRow{"Command", strings.Join(run.Command, " ")})
	}
	commit := run.SUT.Commit
	if commit == "" {
		commit = "unknown (not given with --sut-commit, not detected)"
	} else if commitDetail {
		if run.SUT.CommitSource != "" {
			commit += " (" + run.SUT.CommitSource + ")"
		}
		if run.SUT.Dirty {
			commit += ", uncommitted changes"
		}
	}
	rows = append(rows, envRow{"SUT commit", commit}, envRow{"SUT branch", run.SUT.Branch})
	for _, k := range slices.Sorted(maps.Keys(run.SUT.Versions)) {
		rows = append(rows, envRow{"Version: " + k, run.SUT.Versions[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(run.Environment)) {
		rows = append(rows, envRow{k, run.Environment[k]})
	}
	return slices.DeleteFunc(rows, func(r envRow) bool { return r.value == "" })
}

// knownDefectDetail is what the record and the page say of a scenario's known-defect mark.
func knownDefectDetail(m *record.KnownDefectMark) string {
	switch m.Outcome {
	case record.KDReproduced:
		return fmt.Sprintf("Failed — known product defect %s of %s: it fails by its declared assertion %q (evidence: %s). Still a failure of the product; not counted against the run's exit code.", m.ID, m.Product, m.Assertion, m.Evidence)
	case record.KDNoLongerReproduces:
		return m.StaleText()
	}
	return fmt.Sprintf("Known product defect %s of %s applies to this scenario, but it failed otherwise than by the declared assertion %q: an ordinary failure.", m.ID, m.Product, m.Assertion)
}

// gateRow is one row of the gate's scenario table.
type gateRow struct {
	id, required, status, detail string
	file                         string              // the record in this archive, or ""
	carried                      *record.CarriedOver // where a carried-over scenario last passed
	linked                       bool                // the record is in this archive: the page links to it
}

func (v *View) gateRows() []gateRow {
	var rows []gateRow
	for _, s := range v.gate.Scenarios {
		rows = append(rows, gateRow{id: s.ID, required: gateRequiredText(s), status: s.Status, detail: gateDetailText(s),
			file: s.File, carried: s.CarriedOver, linked: s.File != "" && s.Status != record.StatusNotRun})
	}
	return rows
}

// gateSUTText is the gate's SUT commit, with the form it was given in when that differs.
func gateSUTText(g *record.GateRecord) string {
	sut := g.SUT.Commit
	if g.SUT.Given != "" && g.SUT.Given != g.SUT.Commit {
		sut += " (given as " + g.SUT.Given + ")"
	}
	return mdtext.OrDash(sut)
}

// gateCountsText is the gate's count of scenarios by status.
func gateCountsText(c record.GateCounts) string {
	return fmt.Sprintf("%d — %d passed, %d carried over, %d failed, %d blocked, %d interrupted, %d not run",
		c.Total, c.Passed, c.CarriedOver, c.Failed, c.Blocked, c.Interrupted, c.NotRun)
}

// gateDiffStatText is a diff stat as shown: "(no changes)" rather than nothing.
func gateDiffStatText(d record.GateDiff) string {
	if strings.TrimSpace(d.Stat) == "" {
		return "(no changes)"
	}
	return d.Stat
}

// gateRequiredText and gateDetailText are the Required and Detail cells of the gate's scenario
// table, the same in README.md and index.html.
func gateRequiredText(s record.GateScenario) string {
	if s.Required {
		return "yes"
	}
	return "no (carry-over series)"
}

func gateDetailText(s record.GateScenario) string {
	if co := s.CarriedOver; co != nil {
		return "carried over by the " + co.Series + " rule: " + co.Justification
	}
	return mdtext.OrDash(s.Why)
}

// carryOverStateText says what a carry-over rule decided, in both renderings.
func carryOverStateText(r record.CarryOverRule) string {
	if r.Holds {
		return "holds: the series is carried over"
	}
	return "does not hold: the series runs"
}
