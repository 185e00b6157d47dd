package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// A failure is said once. The runner's reason repeats the failing step's error, and a
// failed assertion's step error repeats the assertion ("what: expected E, saw S"); the
// record keeps all three, the README and the page show each text in one place: the failed
// assertions with expected and seen, the failing steps with what their errors add, the
// reason only when it says something neither says, and the tails of the processes involved.

// tailLines is how many last lines of a process's stdout and stderr a failure shows, and
// tailWidth how many last characters of each line; the record (linked beside it) keeps the
// whole tail.
const (
	tailLines = 20
	tailWidth = 240
)

// failureView is what README.md and index.html show of a failed, blocked or interrupted
// scenario.
type failureView struct {
	Anchor, ID, Status string
	File               string // the scenario's record, relative to the archive
	KnownDefect        string // "" without a mark
	Reason             string // "" when the steps, assertions or cleanup below say it already
	Steps              []failedStep
	Assertions         []record.Assertion
	Cleanup            string // "" when the cleanup went well
	Processes          []processTail
}

// failedStep is a step that did not pass; Error is what its error adds to the failed
// assertions (the assertion's own text is replaced by a pointer to it).
type failedStep struct{ Keyword, Text, Status, Error string }

// processTail is a process involved in a failure with the last lines of its output.
type processTail struct {
	Name, Command, End string
	Streams            []namedTail // stdout, then stderr
}

// namedTail is one output stream by name.
type namedTail struct {
	Name string
	Tail outputTail
}

// outputTail is the end of one output stream: Lines of Total lines (a longer line keeps its
// end), Summary when the record holds a summary of the output instead of its body.
type outputTail struct {
	Text         string
	Lines, Total int
	Summary      bool
}

// Cut says how much of the stream is shown: "" when all of it.
func (o outputTail) Cut() string {
	if o.Lines >= o.Total {
		return ""
	}
	return fmt.Sprintf("last %d of %d lines", o.Lines, o.Total)
}

// assertionText is a failed assertion as the harness words it in the step's error.
func assertionText(a record.Assertion) string {
	return fmt.Sprintf("%s: expected %s, saw %s", a.What, a.Expected, a.Seen)
}

// notPassed reports whether a step's status is one a failure shows.
func notPassed(st record.Step) bool {
	switch st.Status {
	case "failed", "undefined", "pending", "ambiguous":
		return true
	}
	return false
}

// failureOf decides the failure of s; nil for a scenario that passed or did not run.
func (v *View) failureOf(s *record.Scenario, file string) *failureView {
	switch s.Status {
	case record.StatusFailed, record.StatusBlocked, record.StatusInterrupted:
	default:
		return nil
	}
	f := &failureView{Anchor: anchor(s.ID), ID: s.ID, Status: s.Status, File: file, Assertions: record.FailedAssertions(s)}
	if m := s.KnownDefect; m != nil {
		f.KnownDefect = knownDefectDetail(m)
	}
	var said []string // the texts shown below: a reason made of them is not repeated
	for _, a := range f.Assertions {
		said = append(said, assertionText(a))
	}
	for _, st := range s.Steps {
		if !notPassed(st) {
			continue
		}
		errText := st.Error
		for _, a := range f.Assertions {
			errText = strings.ReplaceAll(errText, assertionText(a), "the failed assertion")
		}
		kw, text := stepParts(st)
		f.Steps = append(f.Steps, failedStep{Keyword: strings.TrimSpace(kw), Text: text, Status: st.Status, Error: mdtext.OrDash(errText)})
		said = append(said, st.Error, strconv.Quote(st.Text))
	}
	if !s.Cleanup.OK {
		f.Cleanup = mdtext.OrDash(s.Cleanup.Error)
		said = append(said, s.Cleanup.Error)
	}
	if !saysAlready(s.Reason, said) {
		f.Reason = s.Reason
	}
	f.Processes = involvedProcesses(s.Processes)
	return f
}

// saysAlready reports whether reason is empty or holds one of the texts shown already.
func saysAlready(reason string, said []string) bool {
	if strings.TrimSpace(reason) == "" {
		return true
	}
	for _, t := range said {
		if t != "" && strings.Contains(reason, t) {
			return true
		}
	}
	return false
}

// involvedProcesses are the processes a failure shows: those that ended abnormally (an exit
// code other than 0, a signal, never reaped); when none did, every process with output.
func involvedProcesses(ps []record.Process) []processTail {
	var bad, withOutput []processTail
	for _, p := range ps {
		out, errOut := tailOf(p.StdoutTail, p.OutputSummarized), tailOf(p.StderrTail, p.OutputSummarized)
		t := processTail{Name: p.Name, Command: strings.Join(p.Argv, " "), End: processEnd(p),
			Streams: []namedTail{{"stdout", out}, {"stderr", errOut}}}
		if p.ExitCode == nil || *p.ExitCode != 0 {
			bad = append(bad, t)
		}
		if out.Total+errOut.Total > 0 {
			withOutput = append(withOutput, t)
		}
	}
	if len(bad) > 0 {
		return bad
	}
	return withOutput
}

// processEnd is how a process ended, in a few words.
func processEnd(p record.Process) string {
	switch {
	case p.ExitCode != nil:
		return fmt.Sprintf("exit %d", *p.ExitCode)
	case p.Signal != "":
		return "killed by " + p.Signal
	}
	return "still running or never reaped"
}

// tailOf is the last tailLines lines of an output tail.
func tailOf(text string, summary bool) outputTail {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return outputTail{Summary: summary}
	}
	lines := strings.Split(text, "\n")
	keep := slices.Clone(lines[max(0, len(lines)-tailLines):])
	for i, l := range keep {
		if r := []rune(l); len(r) > tailWidth {
			keep[i] = "…" + string(r[len(r)-tailWidth+1:])
		}
	}
	return outputTail{Text: strings.Join(keep, "\n"), Lines: len(keep), Total: len(lines), Summary: summary}
}
