package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// stepDetails is a scenario's steps and assertions, one click away on the page (a closed
// <details>): a pass shows what it checked, not only that it passed. A failure's own text is
// in its failure section; here a failed step or assertion points there instead of repeating it.
type stepDetails struct {
	Summary    string
	Steps      []stepRow
	Assertions []assertionRow
}

type stepRow struct {
	Keyword, Text string
	Badge         badgeView
	Duration      string
}

// assertionRow is one assertion; Expected and Seen are empty for one that did not hold (the
// failure section shows them).
type assertionRow struct {
	What, Expected, Seen string
	Held                 bool
}

func stepDetailsOf(s *record.Scenario) stepDetails {
	d := stepDetails{}
	held := 0
	for _, st := range s.Steps {
		kw, text := stepParts(st)
		d.Steps = append(d.Steps, stepRow{Keyword: strings.TrimSpace(kw), Text: text, Badge: badgeOf(st.Status),
			Duration: fmtDur(time.Duration(st.DurationMS) * time.Millisecond)})
	}
	for _, a := range s.Assertions {
		r := assertionRow{What: a.What, Held: a.OK}
		if a.OK {
			r.Expected, r.Seen = a.Expected, a.Seen
			held++
		}
		d.Assertions = append(d.Assertions, r)
	}
	d.Summary = fmt.Sprintf("%d steps, %d of %d assertions held", len(s.Steps), held, len(s.Assertions))
	return d
}
