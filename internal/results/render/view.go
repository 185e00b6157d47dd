package render

import (
	"fmt"
	"html/template"
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
// product defect (KPD-1), 0 not run, of 63"; a selection adds its count: "5 passed, 0 failed,
// 0 not run, 58 not selected, of 63".
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
	// Not run counts what was selected and did not run; what the selection left out was
	// never meant to run and is counted apart, only when there is any.
	parts = append(parts, fmt.Sprintf("%d not run", t.NotRun-t.NotSelected))
	if t.NotSelected > 0 {
		parts = append(parts, fmt.Sprintf("%d not selected", t.NotSelected))
	}
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
// (fmt_readme.go) and the page (index.html.tmpl, over indexPage below) render the same sections from it, each in its
// own markup, so that a section's content (which rows, in which order, which words) cannot
// drift between the two. run and scen are redacted already.
type View struct {
	run      *record.Run
	title    string
	duration time.Duration
	totals   string
	gate     *record.GateRecord
	records  map[string]*record.Scenario // by id, for the results table
	files    map[string]string           // each scenario's record in the archive, by id
	scen     []*record.Scenario          // the records in run order
	notRun   []record.ScenarioSummary    // every summary selected and not run, in run order
	// notSelected are the summaries the selection left out, in run order: counted in one
	// line, never listed (run.json keeps their rows).
	notSelected []record.ScenarioSummary
}

// NewView decides the view of run with its written records and its gate record (nil for none).
func NewView(run *record.Run, scen []*record.Scenario, gate *record.GateRecord) *View {
	v := &View{run: run, title: run.Label, duration: run.End.Sub(run.Start), totals: RunTotalsText(run),
		gate: gate, records: map[string]*record.Scenario{}, files: map[string]string{}, scen: scen}
	if v.title == "" {
		v.title = "all"
	}
	for _, s := range scen {
		v.records[s.ID] = s
	}
	for _, s := range run.Scenarios {
		v.files[s.ID] = s.File
		switch {
		case s.NotSelected():
			v.notSelected = append(v.notSelected, s)
		case s.Status == record.StatusNotRun:
			v.notRun = append(v.notRun, s)
		}
	}
	return v
}

// recordFile is the scenario's record in the archive, relative to README.md and index.html;
// "" when the run wrote none.
func (v *View) recordFile(id string) string { return v.files[id] }

// runOrder is the run order of the selected scenarios: the ones the selection left out were
// never in line to run.
func (v *View) runOrder() []string {
	out := []string{}
	left := map[string]bool{}
	for _, s := range v.notSelected {
		left[s.ID] = true
	}
	for _, id := range v.run.RunOrder {
		if !left[id] {
			out = append(out, id)
		}
	}
	return out
}

// notSelectedText is the one line that stands for the scenarios the selection left out,
// with how it left them out: "58 not selected (58 filtered by tag expression); not listed,
// run.json keeps their rows". "" when the selection left nothing out.
func (v *View) notSelectedText() string {
	if len(v.notSelected) == 0 {
		return ""
	}
	var kinds []string
	count := map[string]int{}
	for _, s := range v.notSelected {
		k := s.Reason
		if strings.HasPrefix(k, record.ReasonOtherShardPrefix) {
			k = "in other shards" // "in another shard: 2/3" differs by shard; one count for all
		}
		if k == "" {
			k = "left out by the selection"
		}
		if count[k] == 0 {
			kinds = append(kinds, k)
		}
		count[k]++
	}
	for i, k := range kinds {
		kinds[i] = fmt.Sprintf("%d %s", count[k], k)
	}
	return fmt.Sprintf("%d not selected (%s); not listed, run.json keeps their rows", len(v.notSelected), strings.Join(kinds, ", "))
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

// The page's view: what index.html shows, decided here and written by index.html.tmpl. Every
// field is plain text the template escapes, save the timelines, which timeline.go draws and
// escapes itself.

// indexPage is index.html's model, section by section in page order.
type indexPage struct {
	Title, Start, End, Duration, State, Totals string
	Product                                    *banner  // which FlowNet ran; nil in archives from before it was recorded
	SUTUnknown                                 *banner  // the run recorded no SUT commit; nil when it did
	Flowtest, FeaturesDigest                   string   // the runner's build and the suite's digest; "" when not recorded
	Warnings                                   []banner // stale known defects
	GateVerdict                                *banner  // the release gate's verdict; nil without a gate
	GateFile                                   string   // gate.json beside the page; "" without a gate
	Gate                                       *gateSection
	Results                                    []resultRow
	Evidence                                   []evidenceRow
	Environment                                []keyValue
	Legend                                     []legendEntry
	Timelines                                  []timelineSection
	NotRunHeader                               []string
	NotRun                                     [][]string
	NotSelected                                string          // one line for what the selection left out; "" for nothing
	API                                        *apiSectionPage // nil: the run recorded no counts
}

// banner is a coloured box at the top of the page: its colour, bold words and a plain rest.
type banner struct{ Colour, Bold, Text string }

// badgeView is a status as a coloured pill.
type badgeView struct{ Colour, Word string }

type keyValue struct{ Key, Value string }

// legendEntry is the colour of a timeline's mark and what it means.
type legendEntry struct{ Colour, Meaning string }

// note is one line of a failure: known-defect notes are bold, a first failure is not.
type note struct {
	Bold bool
	Text string
}

type resultRow struct {
	N                            int
	Anchor, ID, Name, Acceptance string
	Badge                        badgeView
	Notes                        []note
	Failure                      bool // the scenario's section holds its failure: the row links to it, never repeats it
	Duration                     string
	File                         string // the scenario's record, relative to the page; "" for none
}

type timelineSection struct {
	Anchor, ID            string
	Badge                 badgeView
	KnownDefect           string // a passed scenario's mark; a failure carries its own; "" without one
	Name, Where, Duration string
	File                  string       // the scenario's record, relative to the page; "" for none
	Failure               *failureView // nil for a pass
	SVG                   template.HTML
	AttemptTimes          string // where the node attempts' times come from; "" without attempts
	Details               stepDetails
}

type apiSectionPage struct {
	Rows          []apiRowPage
	Budget, Heavy string
}

type apiRowPage struct{ App, Requests, Methods, Origins, Throttled, Estimate string }

type gateSection struct {
	Gate, Title                                        string
	Verdict                                            badgeView
	VerdictWhy, Definition, DefinitionSHA256, Required string
	SUTCommit, SUTHead                                 string
	Since                                              *sinceView // nil: no --since-archive
	Counts                                             string
	Rows                                               []gateRowPage
	CarryOver                                          []carryOverPage
}

// sinceView is the archive carried-over evidence comes from: archive, commit, target.
type sinceView struct{ Archive, Commit, Target string }

type gateRowPage struct {
	ID, Anchor       string
	Linked           bool
	Required         string
	Badge            badgeView
	Evidence, Detail string
}

type carryOverPage struct {
	Series, State, Why, Paths, Justification string
	Diffs                                    []keyValue // command and its diff stat
}

// The run's cautions, the same words in README.md and index.html: a sandbox run of the
// reference tested flowtest's model, and a run without a SUT commit cannot say which product
// it tested.
const (
	colCaution       = "#fff4ce"
	sandboxBanner    = "Sandbox: the reference implementations were tested, not the product"
	sutUnknownBanner = "SUT commit unknown"
	sutUnknownWhy    = "not given with --sut-commit and not detected from a checkout, so this record does not name the product commit it tested"
)

// sandboxRun says the run drove flowtest's reference model rather than the product.
func sandboxRun(run *record.Run) bool {
	return run.Product != nil && run.Product.Kind == record.ProductReference
}

// flowtestFact is the runner's build as the header shows it: its version and commit; "" for a
// record from before the build was recorded.
func flowtestFact(b *record.FlowtestBuild) string {
	switch {
	case b == nil:
		return ""
	case b.Commit == "":
		return b.Version + ", commit unknown"
	case b.Modified:
		return b.Version + ", commit " + b.Commit + " with uncommitted changes"
	default:
		return b.Version + ", commit " + b.Commit
	}
}

// page decides index.html's model from the view.
func (v *View) page() *indexPage {
	run := v.run
	pg := &indexPage{Title: v.title, Start: fmtTime(run.Start), End: fmtTime(run.End), Duration: fmtDur(v.duration),
		State: run.State, Totals: v.totals,
		Results: v.resultRows(), Evidence: v.evidenceRows(), Legend: timelineLegend, Timelines: v.timelineSections(), NotRunHeader: notRunHeader, NotRun: v.notRunRows(),
		NotSelected: v.notSelectedText()}
	if run.Product != nil {
		// Which FlowNet ran decides what every figure below means: a reference run tested
		// flowtest's model, not the product.
		pg.Product = &banner{Colour: "#e6f4ea", Bold: "Product: " + run.Product.Label()}
		if sandboxRun(run) {
			pg.Product = &banner{Colour: colCaution, Bold: sandboxBanner, Text: " (product: " + run.Product.Label() + ")"}
		}
	}
	if run.SUT.Commit == "" {
		pg.SUTUnknown = &banner{Colour: colCaution, Bold: sutUnknownBanner, Text: ": " + sutUnknownWhy}
	}
	pg.Flowtest, pg.FeaturesDigest = flowtestFact(run.Flowtest), run.FeaturesDigest
	for _, line := range record.StaleKnownDefects(run.Scenarios) {
		pg.Warnings = append(pg.Warnings, banner{Colour: colFailed, Text: line})
	}
	if g := v.gate; g != nil {
		pg.GateVerdict = &banner{Colour: statusColour(g.Verdict), Bold: "Release gate " + g.Gate + ": " + g.Verdict, Text: g.VerdictWhy}
		pg.GateFile = record.GateFile
		pg.Gate = v.gateSection()
	}
	for _, r := range v.environment(true, false) {
		pg.Environment = append(pg.Environment, keyValue{r.key, r.value})
	}
	if api := v.apiRequests(); len(api.rows) > 0 {
		pg.API = &apiSectionPage{Budget: api.budget, Heavy: api.heavies}
		for _, r := range api.rows {
			pg.API.Rows = append(pg.API.Rows, apiRowPage{r.app, r.requests, r.methods, r.origins, r.throttled, r.estimate})
		}
	}
	return pg
}

// timelineLegend says what a timeline's colours mean.
var timelineLegend = []legendEntry{
	{colPassed, "step passed / wait reached"}, {colFailed, "failed / timed out"}, {colBlocked, "blocked"},
	{colInterrupted, "interrupted / gave up"}, {colProcess, "process"}, {colWait, "wait"},
	{colAttempt, "node attempt (solid: kSQL-Flow's result times, ms; dashed: kintone keeps minutes, the span it lies in)"}, {colBarrier, "barrier hold"},
}

func badgeOf(st string) badgeView {
	return badgeView{Colour: statusColour(st), Word: record.StatusWord(st)}
}

// resultRows is the table of the scenarios that ran, each linking to its record and a
// failure to its section.
func (v *View) resultRows() []resultRow {
	var rows []resultRow
	for _, s := range v.run.Scenarios {
		if s.Status == record.StatusNotRun {
			continue // listed under Not run
		}
		r := resultRow{N: len(rows) + 1, Anchor: anchor(s.ID), ID: s.ID, Name: s.Name, Acceptance: Acceptance(s.Tags), Badge: badgeOf(s.Status),
			Duration: fmtDur(time.Duration(s.DurationMS) * time.Millisecond), File: s.File}
		if m := s.KnownDefect; m != nil {
			r.Notes = append(r.Notes, note{Bold: true, Text: m.Text()})
		}
		// The failure itself is said once, in the scenario's section: the row points there.
		if rec := v.records[s.ID]; rec != nil {
			r.Failure = v.failureOf(rec, s.File) != nil
		}
		rows = append(rows, r)
	}
	return rows
}

// timelineSections is one section per scenario that ran: where it is and its record, its
// failure (once), its timeline and, one click away, its steps and assertions.
func (v *View) timelineSections() []timelineSection {
	var out []timelineSection
	for _, s := range v.scen {
		if s.Status == record.StatusNotRun {
			continue
		}
		where := s.FeatureFile
		if where != "" && s.Line > 0 {
			where += fmt.Sprintf(":%d", s.Line)
		}
		file := v.recordFile(s.ID)
		t := timelineSection{Anchor: anchor(s.ID), ID: s.ID, Badge: badgeOf(s.Status), Name: mdtext.OrDash(s.Name), Where: mdtext.OrDash(where),
			Duration: fmtDur(time.Duration(s.DurationMS) * time.Millisecond), File: file, Failure: v.failureOf(s, file),
			// timelineSVG draws the SVG itself and escapes every text it puts in it
			// (html.EscapeString), so it is trusted markup, not a string from the run.
			SVG: template.HTML(timelineSVG(s)), AttemptTimes: attemptTimesText(s), Details: stepDetailsOf(s)}
		if m := s.KnownDefect; m != nil && t.Failure == nil {
			t.KnownDefect = knownDefectDetail(m)
		}
		out = append(out, t)
	}
	return out
}

// gateSection is the release gate's section: its verdict, definition, scenarios and
// carry-over rules.
func (v *View) gateSection() *gateSection {
	g := v.gate
	gs := &gateSection{Gate: g.Gate, Title: g.Title, Verdict: badgeOf(g.Verdict), VerdictWhy: g.VerdictWhy, Definition: g.Definition,
		DefinitionSHA256: g.DefinitionSHA256, Required: g.Required, SUTCommit: mdtext.OrDash(g.SUT.Commit), SUTHead: g.SUT.Head,
		Counts: gateCountsText(g.Counts)}
	if s := g.Since; s != nil {
		gs.Since = &sinceView{Archive: s.Archive, Commit: mdtext.OrDash(s.Commit), Target: mdtext.OrDash(s.Target)}
	}
	for _, r := range v.gateRows() {
		ev := "—"
		if r.file != "" {
			ev = r.file
		}
		if co := r.carried; co != nil {
			ev = fmt.Sprintf("%s/%s sha256 %s (commit %s)", co.Archive, co.Record, co.SHA256, mdtext.OrDash(co.Commit))
		}
		gs.Rows = append(gs.Rows, gateRowPage{ID: r.id, Anchor: anchor(r.id), Linked: r.linked, Required: r.required,
			Badge: badgeOf(r.status), Evidence: ev, Detail: r.detail})
	}
	for _, r := range g.CarryOver {
		co := carryOverPage{Series: r.Series, State: carryOverStateText(r), Why: r.Why, Paths: strings.Join(r.Paths, ", "), Justification: r.Justification}
		for _, d := range r.Diffs {
			co.Diffs = append(co.Diffs, keyValue{d.Command, strings.TrimRight(gateDiffStatText(d), "\n")})
		}
		gs.CarryOver = append(gs.CarryOver, co)
	}
	return gs
}

func anchor(id string) string { return record.SanitizeLabel(id) }
