package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"

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

// lastArchiveOf is the newest archive under out (<out>/<date>/<time>-<label>/, so newest is
// last by name) whose run.json has this tag expression and target and in which a scenario
// ran; "" when there is none. Only run.json is read.
func lastArchiveOf(out, tags, target, skip string) string {
	dirs, _ := filepath.Glob(filepath.Join(out, "*", "*", "run.json"))
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	skipAbs, _ := filepath.Abs(skip)
	for _, p := range dirs {
		dir := filepath.Dir(p)
		if abs, _ := filepath.Abs(dir); abs == skipAbs {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var run results.Run
		if json.Unmarshal(data, &run) != nil || run.TagExpression != tags || run.Target != target {
			continue
		}
		if run.Totals.Total-run.Totals.NotRun > 0 {
			return dir
		}
	}
	return ""
}
