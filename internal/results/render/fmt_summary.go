package render

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// SummaryFile is the run in a few lines of Markdown, made for a CI job summary
// ($GITHUB_STEP_SUMMARY): the result first, then what failed and why, so that a failure is
// seen without opening the archive. README.md is the whole record.
const SummaryFile = "summary.md"

// summaryMaxListed caps each list of the summary: a job summary is read at a glance, and a
// run where everything failed is told by its result line and README.md, not by 60 items.
const summaryMaxListed = 20

// summaryMaxText caps one value (a reason, an assertion's expected or seen value): a seen
// value can be a whole JSON document; the record holds it in full.
const summaryMaxText = 240

// Summary writes summary.md from the run's view (the records, never README.md's text): the
// verdict and the result line README.md uses, the failures each with its first failing
// assertion or its error and a link to its record, the known product defects, the selected
// scenarios that did not run and why, the gate's verdict, and links to the full record. The
// failures come first, so the first one is within the summary's first 30 lines.
func Summary(v *View) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	run := v.run
	p("# flowtest %s: **%s**\n\n", mdtext.Inline(v.title), summaryVerdict(v))
	p("%s\n", mdtext.Inline(v.totals))
	if v.gate != nil {
		p("\nRelease gate %s: **%s** — %s\n", mdtext.Inline(v.gate.Gate), mdtext.Inline(v.gate.Verdict), mdtext.Inline(v.gate.VerdictWhy))
	}

	var failures, known, stale []record.ScenarioSummary
	for _, s := range run.Scenarios {
		switch {
		case s.Status == record.StatusFailed && s.KnownDefect.Excused():
			known = append(known, s)
		case s.Status == record.StatusFailed || s.Status == record.StatusBlocked || s.Status == record.StatusInterrupted:
			failures = append(failures, s)
		case s.KnownDefect.Stale():
			stale = append(stale, s)
		}
	}
	if len(failures) > 0 {
		p("\n## Failures\n\n")
		summaryList(p, failures, func(s record.ScenarioSummary) {
			head := "**" + mdtext.Inline(s.ID) + "**"
			if s.Status != record.StatusFailed {
				head += " (" + s.Status + ")"
			}
			p("- %s%s\n", head, recordLink(s))
			if m := s.KnownDefect; m != nil {
				p("  - %s\n", oneLine(m.Text()))
			}
			p("  - %s\n", firstFailure(s, v.records[s.ID]))
		})
	}
	if len(known) > 0 || len(stale) > 0 {
		p("\n## Known product defects\n\n")
		summaryList(p, known, func(s record.ScenarioSummary) {
			m := s.KnownDefect
			p("- **%s**: %s of %s, by its declared assertion %q%s\n", mdtext.Inline(s.ID), mdtext.Inline(m.ID), mdtext.Inline(m.Product), oneLine(m.Assertion), recordLink(s))
		})
		summaryList(p, stale, func(s record.ScenarioSummary) {
			p("- **%s**: %s%s\n", mdtext.Inline(s.ID), oneLine(s.KnownDefect.StaleText()), recordLink(s))
		})
	}
	if len(v.notRun) > 0 {
		p("\n## Not run\n\n")
		summaryList(p, v.notRun, func(s record.ScenarioSummary) {
			if s.Reason == "" {
				p("- **%s**: %s\n", mdtext.Inline(s.ID), notRunText(s.NotRunCategory))
			} else {
				p("- **%s**: %s — %s\n", mdtext.Inline(s.ID), notRunText(s.NotRunCategory), oneLine(s.Reason))
			}
		})
	}
	if line := v.notSelectedText(); line != "" {
		p("\n%s.\n", mdtext.Inline(line))
	}
	p("\nThe full record: [README.md](README.md), [%s](%s) (and `run.json`, `junit.xml` beside them).\n", IndexFile, IndexFile)
	return b.Bytes()
}

// summaryVerdict is the run in one word: failed when anything makes the exit code non-zero
// (an unexcused failure, a blocked scenario, a known defect that no longer reproduces),
// interrupted when the run stopped, nothing passed when nothing ran.
func summaryVerdict(v *View) string {
	if v.run.State == record.RunInterrupted {
		return "interrupted"
	}
	for _, s := range v.run.Scenarios {
		if record.Unexcused(s.Status, s.KnownDefect) { // as the exit code counts them
			return "failed"
		}
	}
	switch {
	case v.run.Totals.Interrupted > 0:
		return "interrupted"
	case v.run.Totals.Passed == 0:
		return "nothing passed"
	}
	return "passed"
}

// summaryList writes the first summaryMaxListed items and says how many more README.md lists.
func summaryList(p func(string, ...any), list []record.ScenarioSummary, item func(record.ScenarioSummary)) {
	for i, s := range list {
		if i == summaryMaxListed {
			p("- and %d more: see README.md\n", len(list)-i)
			return
		}
		item(s)
	}
}

// recordLink is the link to a scenario's record, relative to the archive; "" for a scenario
// without one.
func recordLink(s record.ScenarioSummary) string {
	if s.File == "" {
		return ""
	}
	return fmt.Sprintf(" — [%s](%s)", mdtext.Inline(s.File), strings.ReplaceAll(s.File, " ", "%20"))
}

// firstFailure is why a scenario failed, in one line: its first failing assertion with what
// was expected and what was seen, else its first failing step's error, else its reason.
func firstFailure(s record.ScenarioSummary, rec *record.Scenario) string {
	if rec != nil {
		if bad := record.FailedAssertions(rec); len(bad) > 0 {
			a := bad[0]
			return fmt.Sprintf("%s: expected `%s`, saw `%s`", oneLine(a.What), mdtext.Code(clip(mdtext.OrDash(a.Expected), summaryMaxText)), mdtext.Code(clip(mdtext.OrDash(a.Seen), summaryMaxText)))
		}
		for _, st := range rec.Steps {
			if (st.Status == "failed" || st.Status == "undefined" || st.Status == "pending") && st.Error != "" {
				kw, name := stepParts(st)
				return fmt.Sprintf("step %s `%s%s`: %s", st.Status, mdtext.Code(kw), mdtext.Code(name), oneLine(st.Error))
			}
		}
	}
	return oneLine(mdtext.OrDash(s.Reason))
}

// oneLine is s on one line, cut to summaryMaxText characters.
func oneLine(s string) string { return mdtext.Inline(clip(s, summaryMaxText)) }
