package render

import (
	"strings"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"
)

// evidenceRow is one line of the Evidence section, the same in README.md and index.html: an
// acceptance criterion, where and with what result it was shown (the assertions that held),
// its limits, and the records of its scenarios.
type evidenceRow struct {
	Criterion, Environment, Result, Limits string
	Scenarios                              []scenarioRecord
}

// scenarioRecord is a scenario and its record in the archive ("scenarios/<id>.json", relative
// to README.md and index.html); File is "" when the run wrote no record of it.
type scenarioRecord struct{ ID, File string }

// evidenceRows are run.json's evidence rows with each scenario's record found in the run's
// scenario list.
func (v *View) evidenceRows() []evidenceRow {
	var out []evidenceRow
	for _, e := range v.run.Evidence {
		r := evidenceRow{Criterion: e.Criterion, Environment: e.Environment, Result: e.Result, Limits: mdtext.OrDash(e.Limits)}
		for _, id := range e.Scenarios {
			r.Scenarios = append(r.Scenarios, scenarioRecord{ID: id, File: v.recordFile(id)})
		}
		out = append(out, r)
	}
	return out
}

// mdRecordLink is a record link in Markdown, the scenario's id as its text; the id alone
// when there is no record to link to.
func mdRecordLink(l scenarioRecord) string {
	text := strings.NewReplacer("[", `\[`, "]", `\]`).Replace(mdtext.Inline(l.ID))
	if l.File == "" {
		return text
	}
	return "[" + text + "](" + mdLinkTarget(l.File) + ")"
}

// mdLinkTarget is a relative path as a Markdown link target: the characters that would end
// or break the target percent-encoded.
func mdLinkTarget(p string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E", "|", "%7C").Replace(mdtext.Inline(p))
}
