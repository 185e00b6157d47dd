package cli

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// terminalOf returns w when it is a terminal that can redraw a line in place (on Windows, a
// console with virtual-terminal processing, which enableVT turns on), else nil: a pipe, a
// file or TERM=dumb get plain lines.
func terminalOf(w io.Writer) *os.File {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" || !term.IsTerminal(int(f.Fd())) || !enableVT(f) {
		return nil
	}
	return f
}

// status is the run's progress line: the ETA comes from --durations-from, else from the last
// archive of the same selection (tag expression and target) under --out, other than this
// run's own.
func (s *session) status(target, own string) *runner.StatusOptions {
	o := &runner.StatusOptions{Terminal: s.tty != nil}
	if tty := s.tty; tty != nil {
		o.Width = func() int {
			w, _, err := term.GetSize(int(tty.Fd()))
			if err != nil {
				return 0
			}
			return w
		}
	}
	if s.flags.durationsDir != "" {
		o.Expected, o.ExpectedFrom = s.durations, s.flags.durationsDir
		return o
	}
	if dir := lastArchiveOf(s.flags.out, s.flags.tags, target, own); dir != "" {
		if d, err := runner.DurationsOf(dir); err == nil && len(d) > 0 {
			o.Expected, o.ExpectedFrom = d, dir
		}
	}
	return o
}

// lastArchiveOf is the newest archive under out with this tag expression and target in which
// a scenario ran, other than skip; "" when there is none.
func lastArchiveOf(out, tags, target, skip string) string {
	return newestArchive(out, skip, func(run *results.Run) bool {
		return run.TagExpression == tags && run.Target == target && run.Totals.Total-run.Totals.NotRun > 0
	})
}
