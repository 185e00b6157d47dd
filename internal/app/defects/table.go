package defects

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/ksqlflow/flowtest/internal/base/excerpt"
)

// VerdictOf is a defect's overall verdict: caught when every declared scenario caught it.
func VerdictOf(name string, rows []Row) string {
	v := ""
	for _, row := range rows {
		if row.defect != name {
			continue
		}
		switch {
		case row.Verdict == VerdictEscaped:
			return VerdictEscaped
		case row.Verdict == VerdictMissed || row.Verdict == VerdictMetByRun || row.Verdict == VerdictControlOK || row.Verdict == VerdictNotRun: // a proof of an explore catch, or none, not a verdict
		case v == "":
			v = row.Verdict
		}
	}
	if v == "" {
		return VerdictEscaped
	}
	return v
}

// assertionExcerpt cuts a long seen value down to the part around the declared text, so that the
// table shows why it counts (e.g. "…NO_CONFLICT (node FAILED/LOCK_CONFLICT, …").
func assertionExcerpt(seen, around string, ctx int) string {
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

// WriteTable prints the table: defect, wall time, scenario, caught, the failing
// assertion seen (or why it escaped), scenario time.
func WriteTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEFECT\tWALL\tSCENARIO\tCAUGHT\tTIME\tFAILING ASSERTION")
	last := ""
	for _, r := range rows {
		name := r.defect
		if name == last {
			name = ""
		}
		last = r.defect
		verdict, detail := r.Verdict, r.failing
		if r.Why != "" {
			verdict += " (" + excerpt.OneLine(r.Why, 90) + ")"
		}
		dur := ""
		if r.dur > 0 {
			dur = r.dur.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, r.wall, r.Scenario, verdict, dur, excerpt.OneLine(detail, 200))
	}
	tw.Flush()
}
