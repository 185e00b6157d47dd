package cli

// Colour on the console: a run's END lines, its PROGRESS lines and its closing totals show
// passed in green, failed (and blocked) in red, not run (and interrupted) in yellow, only
// when stdout is a terminal and neither NO_COLOR (any non-empty value, no-color.org) nor
// --no-color says otherwise. Nothing else is coloured, and nothing written to a file, a pipe
// or an archive ever is: the colouring writer sits on the terminal alone, under the redactor.

import (
	"io"
	"os"
	"regexp"
	"strings"
)

// ANSI SGR colours.
const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	reset  = "\x1b[0m"
)

// isTerminal decides whether a console writer is a terminal; tests replace it.
var isTerminal = func(w io.Writer) bool { return terminalOf(w) != nil }

// colourWanted reports whether the console w gets colour: a terminal, no NO_COLOR, no
// --no-color.
func colourWanted(w io.Writer, noColor bool, getenv func(string) string) bool {
	return !noColor && getenv("NO_COLOR") == "" && isTerminal(w)
}

// colourConsole is w with colour when colourWanted (the status words of whole lines: the
// console writes whole lines), else w itself.
func colourConsole(w io.Writer, noColor bool) io.Writer {
	if !colourWanted(w, noColor, os.Getenv) {
		return w
	}
	return &consoleWriter{w: w, edit: func(p []byte) []byte { return []byte(colourLines(string(p))) }}
}

var (
	// "END   <id> <status> …"
	endLine = regexp.MustCompile(`^(END +\S+ )(passed|failed|blocked|interrupted|not-run)\b`)
	// "<n> passed", "<n> failed", "<n> not run" of the PROGRESS and totals lines
	countWord = regexp.MustCompile(`\b\d+ (passed|failed|not run|blocked)\b`)
	// the closing totals: "3 passed, 1 failed, 2 not run, …"
	totalsLine = regexp.MustCompile(`^\d+ passed, \d+ failed`)
)

// colourOf is the colour of a status word.
func colourOf(word string) string {
	switch word {
	case "passed":
		return green
	case "failed", "blocked":
		return red
	}
	return yellow // not run, interrupted
}

// colourLines colours the status words of the END, PROGRESS and totals lines in s and leaves
// every other line as it is.
func colourLines(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, line := range lines {
		// A terminal's progress line is redrawn in place: it starts with the erase sequence.
		prefix := ""
		if strings.HasPrefix(line, "\r\x1b[K") {
			prefix, line = "\r\x1b[K", line[len("\r\x1b[K"):]
		}
		switch {
		case endLine.MatchString(line):
			m := endLine.FindStringSubmatchIndex(line)
			word := line[m[4]:m[5]]
			line = line[:m[4]] + colourOf(word) + word + reset + line[m[5]:]
		case strings.HasPrefix(line, "PROGRESS ") || totalsLine.MatchString(line):
			line = countWord.ReplaceAllStringFunc(line, func(w string) string {
				_, word, _ := strings.Cut(w, " ")
				if strings.HasPrefix(w, "0 ") {
					return w // nothing to draw the eye to
				}
				return colourOf(word) + w + reset
			})
		}
		lines[i] = prefix + line
	}
	return strings.Join(lines, "")
}
