package runner

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/results"
)

// StatusOptions turn on the run's progress line: done/total, passed, failed, elapsed and an
// ETA. On a terminal it is one status line, redrawn in place every second and after every
// other console line; elsewhere (CI) one plain line after each finished scenario. It is
// written to Options.Progress like every other console line, so through the console's
// redactor.
type StatusOptions struct {
	Terminal bool
	// Expected are scenario durations of an earlier run (--durations-from, or the last
	// archive of the same selection); ExpectedFrom says where they come from. Without them
	// the ETA uses this run's own pace once a scenario has finished.
	Expected     map[string]time.Duration
	ExpectedFrom string
	Every        time.Duration // terminal redraw interval; default 1 s
	// Width, if set, is the terminal's width now: the status line is cut to it, since a
	// line that wraps cannot be erased in place.
	Width func() int
	Now   func() time.Time // the clock (tests); default time.Now
}

// eraseLine returns the cursor to the line's start and clears it (ANSI; Windows 10+ consoles
// and every terminal emulator understand it).
const eraseLine = "\r\x1b[K"

// status counts finished scenarios and estimates what is left. It is also the console writer
// of the run when it draws a terminal line: every other line is written over the status line,
// which is drawn again below it.
type status struct {
	mu       sync.Mutex
	w        io.Writer
	o        StatusOptions
	conc     int
	start    time.Time
	total    int
	pending  map[string]bool      // selected and not finished
	running  map[string]time.Time // started, not finished
	done     int
	passed   int
	failed   int
	known    int // failed by an applying known product defect's declared assertion (not in failed)
	other    int // blocked, interrupted
	ranSum   time.Duration
	shown    bool // the status line is on the screen (terminal)
	midLine  bool // the last console write did not end its line
	stopTick chan struct{}
	tickDone chan struct{}
}

func newStatus(w io.Writer, o StatusOptions, items []Item, conc int) *status {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Every <= 0 {
		o.Every = time.Second
	}
	s := &status{w: w, o: o, conc: max(conc, 1), start: o.Now(), pending: map[string]bool{}, running: map[string]time.Time{}}
	for _, it := range items {
		if it.Run {
			s.total++
			s.pending[it.ID] = true
		}
	}
	from := "this run's own pace, once a scenario has finished (no earlier archive of this selection)"
	if len(o.Expected) > 0 {
		from = "the durations of " + o.ExpectedFrom
	}
	fmt.Fprintf(w, "PROGRESS %d scenario(s) to run; ETA from %s\n", s.total, from)
	if o.Terminal {
		s.stopTick, s.tickDone = make(chan struct{}), make(chan struct{})
		go s.tick()
	}
	return s
}

func (s *status) tick() {
	defer close(s.tickDone)
	t := time.NewTicker(s.o.Every)
	defer t.Stop()
	for {
		select {
		case <-s.stopTick:
			return
		case <-t.C:
			s.mu.Lock()
			if !s.midLine {
				s.draw()
			}
			s.mu.Unlock()
		}
	}
}

// Write is a console line of the run (START, END, waits, interrupts): on a terminal it
// replaces the status line, which is drawn again once the line is complete.
func (s *status) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		io.WriteString(s.w, eraseLine)
		s.shown = false
	}
	n, err := s.w.Write(p)
	s.midLine = len(p) > 0 && p[len(p)-1] != '\n'
	if s.o.Terminal && !s.midLine {
		s.draw()
	}
	return n, err
}

func (s *status) started(id string) {
	s.mu.Lock()
	s.running[id] = s.o.Now()
	s.mu.Unlock()
}

// finished counts a scenario that ran; in plain mode it prints the progress line.
func (s *status) finished(rec *results.Scenario) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.pending[rec.ID] {
		return
	}
	delete(s.pending, rec.ID)
	delete(s.running, rec.ID)
	s.done++
	s.ranSum += time.Duration(rec.DurationMS) * time.Millisecond
	switch rec.Status {
	case results.StatusPassed:
		s.passed++
	case results.StatusFailed:
		if rec.KnownDefect.Excused() {
			s.known++ // as the closing line counts it: not among the failures
		} else {
			s.failed++
		}
	default:
		s.other++
	}
	if s.o.Terminal {
		if !s.midLine {
			s.draw()
		}
		return
	}
	fmt.Fprintln(s.w, s.line())
}

// stop ends the terminal line: the last state stays on screen as a line of its own.
func (s *status) stop() {
	if s.stopTick != nil {
		close(s.stopTick)
		<-s.tickDone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.o.Terminal {
		if s.shown {
			io.WriteString(s.w, eraseLine)
			s.shown = false
		}
		fmt.Fprintln(s.w, s.line())
	}
}

func (s *status) draw() {
	if s.shown {
		io.WriteString(s.w, eraseLine)
	}
	line := s.line()
	if s.o.Width != nil {
		if w := s.o.Width(); w > 1 && len(line) >= w {
			line = line[:w-1] // ASCII only: no rune is cut
		}
	}
	io.WriteString(s.w, line)
	s.shown = true
}

// line is the progress line: "PROGRESS 5/18 done, 4 passed, 1 failed; elapsed 2m5s, ETA
// 3m10s", with ", 1 blocked/interrupted" after failed when there is one. Short, so that it
// fits a terminal line.
func (s *status) line() string {
	now := s.o.Now()
	eta := "ETA unknown"
	if d, ok := s.eta(now); ok {
		eta = "ETA " + roundDur(d)
	}
	other := ""
	if s.known > 0 {
		other = fmt.Sprintf(", %d known product defect(s)", s.known)
	}
	if s.other > 0 {
		other += fmt.Sprintf(", %d blocked/interrupted", s.other)
	}
	return fmt.Sprintf("PROGRESS %d/%d done, %d passed, %d failed%s; elapsed %s, %s",
		s.done, s.total, s.passed, s.failed, other, roundDur(now.Sub(s.start)), eta)
}

// eta estimates the time left: each scenario not finished takes its expected duration (from
// the earlier run; for one it does not know, the mean of those it knows, else the mean of
// this run's finished ones), less what a running one has run already; the sum is shared by
// the workers, but the run lasts at least as long as its longest remaining scenario.
func (s *status) eta(now time.Time) (time.Duration, bool) {
	if len(s.pending) == 0 {
		return 0, true
	}
	var fallback time.Duration
	if len(s.o.Expected) > 0 {
		var sum time.Duration
		for _, d := range s.o.Expected {
			sum += d
		}
		fallback = sum / time.Duration(len(s.o.Expected))
	} else if s.done > 0 {
		fallback = s.ranSum / time.Duration(s.done)
	} else {
		return 0, false
	}
	var rest, longest time.Duration
	for id := range s.pending {
		d, ok := s.o.Expected[id]
		if !ok {
			d = fallback
		}
		if at, ok := s.running[id]; ok {
			d = max(d-now.Sub(at), 0)
		}
		rest += d
		longest = max(longest, d)
	}
	return max(rest/time.Duration(s.conc), longest), true
}

func roundDur(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	return d.Round(time.Second).String()
}
