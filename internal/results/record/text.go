package record

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// SanitizeLabel turns a tag expression into a file-name-safe label:
// "@p2-16 and not @slow" -> "p2-16-and-not-slow"; empty -> "all"; at most 60 bytes.
func SanitizeLabel(label string) string {
	var b strings.Builder
	dash := false
	for _, r := range label {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-.")
	if len(s) > 60 {
		s = strings.Trim(s[:60], "-.")
	}
	if s == "" {
		return "all"
	}
	return s
}

// KnownDefectIDs are the ids of the run's rows marked with outcome, in run order.
func KnownDefectIDs(sums []ScenarioSummary, outcome string) []string {
	var ids []string
	for _, s := range sums {
		if m := s.KnownDefect; m != nil && m.Outcome == outcome {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// StaleKnownDefects are the flags of the run's known defects that no longer reproduce, one
// line each, for the console, the record and the page.
func StaleKnownDefects(sums []ScenarioSummary) []string {
	var out []string
	for _, s := range sums {
		if s.KnownDefect.Stale() {
			out = append(out, s.KnownDefect.StaleText()+" (scenario "+s.ID+" passed)")
		}
	}
	return out
}

func StatusWord(st string) string {
	switch st {
	case StatusNotRun:
		return "not run"
	case StatusCarriedOver:
		return "carried over"
	}
	return st
}
