package render

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// Readme writes README.md, the acceptance record a person reads, from the run's view,
// section by section; the bytes go through the archive writer once more.
func Readme(v *View) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	readmeHeader(p, v)
	if v.gate != nil {
		renderGateMarkdown(p, v)
	}
	readmeEnvironment(p, v)
	readmeResults(p, v)
	readmeFailures(p, v)
	readmeNotRun(p, v)
	readmeAPIRequests(p, v)
	readmeEvidence(p, v)
	return b.Bytes()
}

// readmeHeader is the title and the run in a list: dates, state, result, product, stale
// known defects, the gate's verdict and the files beside the README.
func readmeHeader(p func(string, ...any), v *View) {
	run, gate := v.run, v.gate
	p("# Acceptance record: %s\n\n", mdtext.Inline(v.title))
	p("- Date: %s to %s (%s)\n", fmtTime(run.Start), fmtTime(run.End), fmtDur(v.duration))
	p("- State: **%s**\n", mdtext.Inline(run.State))
	p("- Result: %s\n", v.totals)
	if run.Product != nil {
		p("- Product: **%s**\n", mdtext.Inline(run.Product.Label()))
	}
	if sandboxRun(run) {
		p("- **%s**\n", sandboxBanner)
	}
	if run.SUT.Commit == "" {
		p("- **%s**: %s\n", sutUnknownBanner, sutUnknownWhy)
	}
	if f := flowtestFact(run.Flowtest); f != "" {
		p("- flowtest: %s\n", mdtext.Inline(f))
	}
	if run.FeaturesDigest != "" {
		p("- Features digest: `%s`\n", mdtext.Inline(run.FeaturesDigest))
	}
	for _, line := range record.StaleKnownDefects(run.Scenarios) {
		p("- **Warning**: %s\n", mdtext.Inline(line))
	}
	if gate != nil {
		p("- Release gate %s: **%s**\n", mdtext.Inline(gate.Gate), mdtext.Inline(gate.Verdict))
	}
	files := "`run.json` (schema_version %d), `scenarios/<id>.json`, `summary.md`, `cucumber.json`, `junit.xml`, `messages.ndjson`, `index.html`"
	if gate != nil {
		files += ", `" + record.GateFile + "`"
	}
	p("- Files: "+files+"; all redacted\n\n", run.SchemaVersion)
}

// readmeEnvironment is the environment table and the run order.
func readmeEnvironment(p func(string, ...any), v *View) {
	p("## Environment\n\n| | |\n| --- | --- |\n")
	for _, r := range v.environment(false, true) {
		p("| %s | %s |\n", mdtext.Cell(r.key), mdtext.Cell(r.value))
	}

	p("\n## Run order\n\n")
	switch {
	case len(v.run.RunOrder) == 0:
		p("(none recorded)\n")
	case len(v.runOrder()) == 0:
		p("(none selected)\n")
	}
	for i, id := range v.runOrder() {
		p("%d. %s\n", i+1, mdtext.Inline(id))
	}
}

// readmeResults is a row per scenario selected, those not run too (their reasons are below);
// the ones the selection left out are counted in one line under Not run.
func readmeResults(p func(string, ...any), v *View) {
	run := v.run
	p("\n## Results\n\n| Scenario | Acceptance | Result | Duration | Evidence |\n| --- | --- | --- | --- | --- |\n")
	for _, s := range run.Scenarios {
		if s.NotSelected() {
			continue
		}
		result := s.Status
		if s.Status == record.StatusFailed || s.Status == record.StatusBlocked || s.Status == record.StatusInterrupted {
			result = "**" + s.Status + "**"
		}
		if m := s.KnownDefect; m != nil {
			result += " — " + mdtext.Cell(m.Text())
		}
		file := "—"
		if s.File != "" {
			file = "[`" + mdtext.Code(s.File) + "`](" + mdLinkTarget(s.File) + ")"
		}
		p("| %s | %s | %s | %s | %s |\n", mdtext.Cell(s.ID), mdtext.Cell(Acceptance(s.Tags)), result, fmtDur(time.Duration(s.DurationMS)*time.Millisecond), file)
	}
}

// readmeFailures are the failed, then the blocked and interrupted scenarios, each failure
// said once (failure.go): why, the assertions that failed, the steps that did not pass, a
// failed cleanup, the tails of the processes involved and the record.
func readmeFailures(p func(string, ...any), v *View) {
	for _, group := range []struct {
		heading  string
		statuses []string
	}{
		{"Failures", []string{record.StatusFailed}},
		{"Blocked and interrupted (not failures of the SUT, not passes either)", []string{record.StatusBlocked, record.StatusInterrupted}},
	} {
		var list []*failureView
		for _, s := range v.scen {
			if slices.Contains(group.statuses, s.Status) {
				list = append(list, v.failureOf(s, v.recordFile(s.ID)))
			}
		}
		if len(list) == 0 {
			continue
		}
		p("\n## %s\n\n", group.heading)
		for _, f := range list {
			readmeFailure(p, f)
		}
	}
}

// readmeFailure is one failure of readmeFailures.
func readmeFailure(p func(string, ...any), f *failureView) {
	if f.Status == record.StatusFailed {
		p("### %s\n\n", mdtext.Inline(f.ID))
	} else {
		p("### %s (%s)\n\n", mdtext.Inline(f.ID), f.Status)
	}
	if f.KnownDefect != "" {
		p("%s\n\n", mdtext.Inline(f.KnownDefect))
	}
	if f.Reason != "" {
		p("%s\n\n", mdtext.Inline(f.Reason))
	}
	for _, a := range f.Assertions {
		p("- %s: expected %s, saw %s\n", mdtext.Inline(a.What), mdtext.Inline(a.Expected), mdtext.Inline(a.Seen))
	}
	for _, st := range f.Steps {
		p("- step %s: `%s %s`: %s\n", st.Status, mdtext.Code(st.Keyword), mdtext.Code(st.Text), mdtext.Inline(st.Error))
	}
	if f.Cleanup != "" {
		p("- cleanup failed: %s\n", mdtext.Inline(f.Cleanup))
	}
	if f.File != "" {
		p("- record: %s\n", mdRecordLink(scenarioRecord{ID: f.File, File: f.File}))
	}
	for _, pr := range f.Processes {
		p("\nProcess %s — %s (`%s`):\n\n", mdtext.Inline(pr.Name), pr.End, mdtext.Code(pr.Command))
		for _, st := range pr.Streams {
			readmeTail(p, st)
		}
	}
	p("\n")
}

// readmeTail is one output stream of a process in a fence no line of it can close.
func readmeTail(p func(string, ...any), st namedTail) {
	if st.Tail.Text == "" {
		p("- %s: empty\n", st.Name)
		return
	}
	note := ""
	if st.Tail.Summary {
		note += " (summary of the output)"
	}
	if cut := st.Tail.Cut(); cut != "" {
		note += " (" + cut + "; the record keeps the whole tail)"
	}
	fence := "```"
	for strings.Contains(st.Tail.Text, fence) {
		fence += "`"
	}
	p("- %s%s:\n\n  %stext\n", st.Name, note, fence)
	for _, line := range strings.Split(st.Tail.Text, "\n") {
		p("  %s\n", line)
	}
	p("  %s\n", fence)
}

func readmeNotRun(p func(string, ...any), v *View) {
	p("\n## Not run\n\n")
	mdTable(p, "Every selected scenario ran.\n", notRunHeader, v.notRunRows())
	if line := v.notSelectedText(); line != "" {
		p("\n%s.\n", mdtext.Inline(line))
	}
}

func readmeAPIRequests(p func(string, ...any), v *View) {
	if api := v.apiRequests(); len(api.rows) > 0 {
		p("\n## API requests\n\nkintone REST requests per app, the runner's own and its proxies' (kintone counts them per app and day).\n\n")
		p("| App | Requests | By method | By origin | Throttled (429) | Estimated |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, r := range api.rows {
			p("| %s | %s | %s | %s | %s | %s |\n", mdtext.Cell(r.app), r.requests, mdtext.Cell(r.methods), mdtext.Cell(r.origins), r.throttled, r.estimate)
		}
		for _, line := range []string{api.budget, api.heavies} {
			if line != "" {
				p("\n%s\n", mdtext.Inline(line))
			}
		}
	}
}

// readmeEvidence is the evidence table, each scenario linked to its record.
func readmeEvidence(p func(string, ...any), v *View) {
	p("\n## Evidence\n\n")
	var evidence [][]string
	for _, e := range v.evidenceRows() {
		evidence = append(evidence, []string{e.Criterion, e.Environment, e.Result, e.Limits, readmeRecordLinks(e.Scenarios)})
	}
	mdTable(p, "(no evidence rows recorded)\n", []string{"Criterion", "Environment", "Result", "Limits", "Scenarios"}, evidence)
}

// mdTable writes a Markdown table of header and rows, every cell through mdtext.Cell; empty
// instead when there are no rows.
func mdTable(p func(string, ...any), empty string, header []string, rows [][]string) {
	if len(rows) == 0 {
		p("%s", empty)
		return
	}
	p("| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat(" --- |", len(header)))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = mdtext.Cell(c)
		}
		p("| %s |\n", strings.Join(cells, " | "))
	}
}

// renderGateMarkdown is the README's release-gate section.
func renderGateMarkdown(p func(string, ...any), v *View) {
	g := v.gate
	p("## Release gate %s: **%s**\n\n", mdtext.Inline(g.Gate), mdtext.Inline(g.Verdict))
	if g.Title != "" {
		p("%s\n\n", mdtext.Inline(g.Title))
	}
	p("- Verdict: **%s** — %s\n", mdtext.Inline(g.Verdict), mdtext.Inline(g.VerdictWhy))
	p("- Definition: `%s` (sha256 %s)\n", mdtext.Code(g.Definition), mdtext.Inline(g.DefinitionSHA256))
	p("- Required: `%s`\n", mdtext.Code(g.Required))
	p("- SUT commit: %s\n", mdtext.Inline(gateSUTText(g)))
	if g.SUT.Head != "" {
		p("- **Warning**: the SUT repository's HEAD is %s, not the gate's commit\n", mdtext.Inline(g.SUT.Head))
	}
	if g.Since != nil {
		p("- Carried-over evidence from: `%s` (SUT commit %s, target %s)\n", mdtext.Code(g.Since.Archive), mdtext.Inline(mdtext.OrDash(g.Since.Commit)), mdtext.Inline(mdtext.OrDash(g.Since.Target)))
	} else {
		p("- Carried-over evidence from: none (no --since-archive): every carry-over series runs\n")
	}
	p("- Scenarios: %s\n\n", gateCountsText(g.Counts))
	p("| Scenario | Required | Status | Evidence | Detail |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range v.gateRows() {
		ev := "—"
		if r.file != "" {
			ev = "`" + r.file + "`"
		}
		if co := r.carried; co != nil {
			ev = fmt.Sprintf("`%s/%s` sha256 %s (commit %s)", mdtext.Code(co.Archive), mdtext.Code(co.Record), co.SHA256, mdtext.OrDash(co.Commit))
		}
		st := record.StatusWord(r.status)
		if r.status != record.StatusPassed && r.status != record.StatusCarriedOver {
			st = "**" + st + "**"
		}
		p("| %s | %s | %s | %s | %s |\n", mdtext.Cell(r.id), r.required, st, mdtext.Cell(ev), mdtext.Cell(r.detail))
	}
	if len(g.CarryOver) > 0 {
		p("\n### Carry-over rules\n\n")
		for _, r := range g.CarryOver {
			state := carryOverStateText(r)
			p("- **%s** (%s) — %s. Paths: %s. %s\n", mdtext.Inline(r.Series), state, mdtext.Inline(r.Why), mdtext.Inline(strings.Join(r.Paths, ", ")), mdtext.Inline(r.Justification))
			for _, d := range r.Diffs {
				p("\n  `%s`\n\n", mdtext.Code(d.Command))
				stat := gateDiffStatText(d)
				fence := "```"
				for strings.Contains(stat, fence) {
					fence += "`"
				}
				p("  %stext\n", fence)
				for _, line := range strings.Split(strings.TrimRight(stat, "\n"), "\n") {
					p("  %s\n", line)
				}
				p("  %s\n", fence)
			}
		}
	}
	p("\n")
}

// readmeRecordLinks are the scenarios of an evidence row, each linked to its record.
func readmeRecordLinks(l []scenarioRecord) string {
	links := make([]string, len(l))
	for i, r := range l {
		links[i] = mdRecordLink(r)
	}
	return strings.Join(links, ", ")
}
