// Package excerpt cuts process output down to what fits a table cell or a one-line reason
// (the defect table, the rehearsal's outcome lines): both need it, and neither may import
// the other.
package excerpt

import "strings"

// LastLines is the last n lines of s, joined with " | ".
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// OneLine collapses whitespace and cuts s to max runes for a table cell.
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
