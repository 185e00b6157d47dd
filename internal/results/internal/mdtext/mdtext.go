// Package mdtext puts record text into Markdown: the README's renderer and the before/after
// evidence report write the same tables and inline code, and must escape them alike.
package mdtext

import "strings"

// Cell is s as one cell of a Markdown table: a pipe escaped, line breaks as <br>.
func Cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\r\n", "<br>")
	return strings.ReplaceAll(s, "\n", "<br>")
}

// Inline is s on one line (a line break would end a list item or a heading).
func Inline(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", " "), "\n", " ")
}

// Code is s inside one pair of backticks: on one line, its own backticks turned into quotes.
func Code(s string) string { return strings.ReplaceAll(Inline(s), "`", "'") }

// OrDash is s, or an em dash when s is empty (an empty cell reads as a rendering fault).
func OrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
