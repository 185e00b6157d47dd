package render

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// timeline geometry
const (
	tlWidth  = 1000
	tlLabel  = 230 // left column for lane labels
	tlRight  = 16
	tlLane   = 22
	tlAxis   = 26
	tlBarPad = 4
)

type lane struct {
	label string
	marks []mark
}

type mark struct {
	from, to time.Time // to == from: a point
	colour   string
	title    string // the SVG <title>: exact start, end and where the times come from
	text     string // drawn on (or beside) the bar
	dashed   bool   // uncertain extent (minute-precision times)
	diamond  bool
	kind     string // class of the shape (tl-step, tl-process, tl-attempt, …)
}

// spanText is a bar's exact extent for its <title>: "10:11:29.000–10:11:30.200 UTC (1.2 s)".
func spanText(from, to time.Time) string {
	const f = "15:04:05.000"
	d := "0 ms"
	if to.After(from) {
		d = fmtDur(to.Sub(from))
	}
	return fmt.Sprintf("%s–%s UTC (%s)", from.UTC().Format(f), to.UTC().Format(f), d)
}

// minuteText is a kintone DATETIME as it is: a minute.
func minuteText(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04") + " UTC (minute)"
}

// axis is a timeline's time range: the scenario's, widened by the marks drawn on it, each
// by less than a minute (a stray time must not squash the rest of the drawing).
type axis struct{ t0, t1 time.Time }

func (a *axis) grow(t time.Time) {
	if t.IsZero() {
		return
	}
	if a.t0.IsZero() || t.Before(a.t0) && a.t0.Sub(t) < time.Minute {
		a.t0 = t
	}
	if t.After(a.t1) && t.Sub(a.t1) < time.Minute {
		a.t1 = t
	}
}

// spanFrom is the end of a span of ms milliseconds from from; both ends widen the axis.
func (a *axis) spanFrom(from time.Time, ms int64) time.Time {
	to := from.Add(time.Duration(ms) * time.Millisecond)
	a.grow(from)
	a.grow(to)
	return to
}

// timelineSVG draws one scenario on one time axis: its steps, the processes it started, the
// node attempts its runs left, its waits and its barrier holds. The lanes are gathered in
// this order, which is also the order in which they widen the axis.
func timelineSVG(s *record.Scenario) string {
	ax := &axis{t0: s.Start, t1: s.End}
	var lanes []lane
	if steps := stepLane(s, ax); len(steps.marks) > 0 {
		lanes = append(lanes, steps)
	}
	lanes = append(lanes, processLanes(s, ax)...)
	lanes = append(lanes, attemptLanes(s)...)
	lanes = append(lanes, waitLanes(s, ax)...)
	lanes = append(lanes, barrierLanes(s, ax)...)
	if len(lanes) == 0 {
		return "<p class=\"muted\">(nothing to draw: the record holds no timed step, process, attempt, wait or barrier)</p>\n"
	}
	return drawTimeline(s.ID, lanes, ax.t0, ax.t1)
}

// stepLane is the steps' lane, led by the runner's setup before the first step.
func stepLane(s *record.Scenario, ax *axis) lane {
	var steps lane
	steps.label = "steps"
	if s.SetupMS != nil && *s.SetupMS > 0 {
		// The runner's own time before the first step, labelled so that it is not read as
		// the scenario's.
		end := s.Start.Add(time.Duration(*s.SetupMS) * time.Millisecond)
		steps.marks = append(steps.marks, mark{from: s.Start, to: end, colour: "#c8c8c8", text: "setup", kind: "tl-setup",
			title: fmt.Sprintf("setup (runner): %d ms before the first step — %s; source: the record's start and setup_ms", *s.SetupMS, spanText(s.Start, end))})
	}
	for _, st := range s.Steps {
		if st.Start.IsZero() {
			continue
		}
		end := ax.spanFrom(st.Start, st.DurationMS)
		steps.marks = append(steps.marks, mark{from: st.Start, to: end, colour: statusColour(st.Status), kind: "tl-step",
			title: fmt.Sprintf("step %s: %s — %s; source: the runner's step times", st.Status, st.Text, spanText(st.Start, end))})
	}
	return steps
}

// processLanes are one lane per process the scenario started.
func processLanes(s *record.Scenario, ax *axis) []lane {
	var lanes []lane
	for _, pr := range s.Processes {
		l := lane{label: "process " + pr.Name}
		end := ""
		switch {
		case pr.ExitCode != nil:
			end = fmt.Sprintf("exit %d", *pr.ExitCode)
		case pr.Signal != "":
			end = pr.Signal
		}
		if pr.Start.IsZero() {
			l.label += " (start not recorded)"
			lanes = append(lanes, l)
			continue
		}
		_, to := processSpan(pr, s.End)
		ax.grow(pr.Start)
		ax.grow(to)
		col := colProcess
		if pr.ExitCode == nil && pr.Signal != "" {
			col = colInterrupted
		}
		l.marks = append(l.marks, mark{from: pr.Start, to: to, colour: col, text: end, kind: "tl-process",
			title: fmt.Sprintf("process %s: %s, %s — %s; source: the harness (start, exit)", pr.Name, strings.Join(pr.Argv, " "), mdtext.OrDash(end), spanText(pr.Start, to))})
		if end != "" {
			l.label += " — " + end
		}
		lanes = append(lanes, l)
	}
	return lanes
}

// attemptLanes are one lane per node attempt (a node's attempts often share the same
// minutes), nodes in order of first appearance; each within the process that ran it
// (attempts.go). Their minute-precise times do not widen the axis.
func attemptLanes(s *record.Scenario) []lane {
	var lanes []lane
	ran := attemptProcesses(s)
	nodes, byNode := groupInOrder(s.Attempts, func(a record.Attempt) string { return a.Node })
	for _, node := range nodes {
		idx := byNode[node]
		sort.SliceStable(idx, func(i, j int) bool { return s.Attempts[idx[i]].AttemptNo < s.Attempts[idx[j]].AttemptNo })
		for _, i := range idx {
			a := s.Attempts[i]
			l := lane{label: fmt.Sprintf("node %s #%d", clipLeft(node, 24), a.AttemptNo)}
			took := fmtDur(time.Duration(a.DurationSec * float64(time.Second)))
			text := strings.TrimSpace(a.Status + " " + a.ResultCode + " " + took)
			if a.StartedAt.IsZero() {
				l.label += " — " + text + " (no start time)"
				lanes = append(lanes, l)
				continue
			}
			from, to, src := attemptWindow(s, a, ran[i])
			title := fmt.Sprintf("node %s attempt %d: %s, ran %s; ", a.Node, a.AttemptNo, text, took)
			switch src {
			case srcResult:
				title += fmt.Sprintf("%s; source: kSQL-Flow's Execution Result startedAt/finishedAt (ms; NODE_ATTEMPT started_at %s)", spanText(from, to), minuteText(a.StartedAt))
			case srcKintoneExact:
				title += fmt.Sprintf("%s; source: NODE_ATTEMPT started_at/finished_at", spanText(from, to))
			default:
				within := "the scenario's lifetime (no FlowNet process of the record overlaps its minutes)"
				if ran[i] >= 0 {
					within = "the lifetime of process " + s.Processes[ran[i]].Name
				}
				title += fmt.Sprintf("somewhere in %s, its minutes cut to %s; source: NODE_ATTEMPT started_at %s, finished_at %s (kintone DATETIME keeps minutes)",
					spanText(from, to), within, minuteText(a.StartedAt), minuteText(a.FinishedAt))
			}
			if a.InvocationID != "" {
				title += ", invocation " + a.InvocationID
			}
			l.marks = append(l.marks, mark{from: from, to: to, colour: colAttempt, dashed: src == srcKintoneMinute, text: text, kind: "tl-attempt", title: title})
			lanes = append(lanes, l)
		}
	}
	return lanes
}

// waitLanes are the waits, packed into as few lanes as do not overlap.
func waitLanes(s *record.Scenario, ax *axis) []lane {
	var waitLanes []lane
	var laneEnd []time.Time
	for _, w := range s.Waits {
		if w.Start.IsZero() {
			continue
		}
		to := ax.spanFrom(w.Start, w.ElapsedMS)
		col := colWait
		if w.Outcome != record.WaitReached {
			col = statusColour(w.Outcome)
		}
		m := mark{from: w.Start, to: to, colour: col, kind: "tl-wait",
			title: fmt.Sprintf("wait for %s: %s after %s (limit %s)%s — %s; source: harness/wait", w.What, w.Outcome, fmtDur(time.Duration(w.ElapsedMS)*time.Millisecond), fmtDur(time.Duration(w.LimitMS)*time.Millisecond), errSuffix(w.LastError), spanText(w.Start, to))}
		placed := false
		for i := range waitLanes {
			if !w.Start.Before(laneEnd[i]) {
				waitLanes[i].marks = append(waitLanes[i].marks, m)
				laneEnd[i] = to.Add(time.Millisecond)
				placed = true
				break
			}
		}
		if !placed {
			label := "waits" // further lanes numbered: two rows must not read the same
			if n := len(waitLanes); n > 0 {
				label = fmt.Sprintf("waits (%d)", n+1)
			}
			waitLanes = append(waitLanes, lane{label: label, marks: []mark{m}})
			laneEnd = append(laneEnd, to.Add(time.Millisecond))
		}
	}
	return waitLanes
}

// barrierLanes are one lane per barrier id; a hold runs from arrival to release.
func barrierLanes(s *record.Scenario, ax *axis) []lane {
	var lanes []lane
	barrierIDs, byBarrier := groupInOrder(s.Barriers, func(ba record.BarrierArrival) string { return ba.ID })
	for _, id := range barrierIDs {
		// Labelled as the feature names it, with the process whose proxy holds it; the
		// scope-prefixed id (older records) differs only at its end.
		first := s.Barriers[byBarrier[id][0]]
		l := lane{label: "barrier " + clipLeft(id, 30)}
		if first.Name != "" {
			l.label = "barrier " + first.Name
			if first.Process != "" {
				l.label += " — " + first.Process
			}
		}
		for _, i := range byBarrier[id] {
			ba := s.Barriers[i]
			ax.grow(ba.At)
			m := mark{from: ba.At, to: ba.At, colour: colBarrier, diamond: true, kind: "tl-barrier",
				title: fmt.Sprintf("barrier %s (%s) held %s %s, status %d", mdtext.OrDash(ba.Name), ba.Phase, ba.Method, ba.Path, ba.Status)}
			if ba.Process != "" {
				m.title += ", in the fault proxy of " + ba.Process
			}
			if !ba.ReleasedAt.IsZero() {
				ax.grow(ba.ReleasedAt)
				m.to, m.diamond = ba.ReleasedAt, false
				m.title += ", released after " + fmtDur(ba.ReleasedAt.Sub(ba.At)) + " — " + spanText(ba.At, ba.ReleasedAt)
			} else {
				m.title += fmt.Sprintf(" — at %s UTC, no release recorded", ba.At.UTC().Format("15:04:05.000"))
			}
			m.title += "; source: the fault proxy's arrival, the scenario's release; id " + ba.ID
			l.marks = append(l.marks, m)
		}
		lanes = append(lanes, l)
	}
	return lanes
}

// drawTimeline draws the lanes on the axis t0..t1 as one SVG.
func drawTimeline(id string, lanes []lane, t0, t1 time.Time) string {
	if t0.IsZero() || !t1.After(t0) {
		t1 = t0.Add(time.Second)
	}
	span := t1.Sub(t0)
	plotW := float64(tlWidth - tlLabel - tlRight)
	x := func(t time.Time) float64 {
		if t.Before(t0) {
			t = t0
		}
		if t.After(t1) {
			t = t1
		}
		return float64(tlLabel) + plotW*float64(t.Sub(t0))/float64(span)
	}
	height := tlAxis + len(lanes)*tlLane + 8
	var b strings.Builder
	e := html.EscapeString
	fmt.Fprintf(&b, "<svg role=\"img\" aria-label=\"timeline of %s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", e(id), tlWidth, height, tlWidth, height)
	fmt.Fprintf(&b, "<title>Timeline of %s: %s from %s</title>\n", e(id), e(fmtDur(span)), e(t0.UTC().Format("15:04:05.000")))
	fmt.Fprintf(&b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#e0e0e0\"/>\n", tlWidth, height)
	// Axis with ticks.
	step := tickStep(span)
	for t := time.Duration(0); t <= span; t += step {
		tx := x(t0.Add(t))
		fmt.Fprintf(&b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e0e0e0\"/>\n", tx, tlAxis-6, tx, height-4)
		fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", tx, tlAxis-10, e(tickLabel(t, step)))
	}
	fmt.Fprintf(&b, "<text x=\"6\" y=\"%d\" font-weight=\"600\">t = 0 at %s UTC</text>\n", tlAxis-10, e(t0.UTC().Format("15:04:05.000")))
	for i, l := range lanes {
		y := tlAxis + i*tlLane
		if i%2 == 1 {
			fmt.Fprintf(&b, "<rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f0f0f0\"/>\n", y, tlWidth, tlLane)
		}
		if short := clip(l.label, 40); short != l.label {
			fmt.Fprintf(&b, "<text x=\"6\" y=\"%d\">%s<title>%s</title></text>\n", y+15, e(short), e(l.label)) // the whole label on hover
		} else {
			fmt.Fprintf(&b, "<text x=\"6\" y=\"%d\">%s</text>\n", y+15, e(l.label))
		}
		for _, m := range l.marks {
			drawMark(&b, m, y, x(m.from), x(m.to))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// drawMark draws one mark of a lane at y, from x1 to x2: a diamond for a moment, else a
// bar with its text on it (or beside it when it does not fit).
func drawMark(b *strings.Builder, m mark, y int, x1, x2 float64) {
	e := html.EscapeString
	if m.diamond {
		cy := float64(y) + tlLane/2
		fmt.Fprintf(b, "<path class=\"%s\" d=\"M%.1f %.1f l5 5 l-5 5 l-5 -5 z\" fill=\"%s\"><title>%s</title></path>\n", m.kind, x1, cy-5, m.colour, e(m.title))
		return
	}
	w := math.Max(x2-x1, 2)
	extra := ""
	if m.dashed {
		extra = fmt.Sprintf(" fill-opacity=\"0.35\" stroke=\"%s\" stroke-dasharray=\"4 3\"", m.colour)
	}
	fmt.Fprintf(b, "<rect class=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"2\" fill=\"%s\"%s><title>%s</title></rect>\n",
		m.kind, x1, y+tlBarPad, w, tlLane-2*tlBarPad, m.colour, extra, e(m.title))
	if m.text != "" {
		// On the bar when it fits (white on a solid bar), else just after it.
		tw := 6.5 * float64(len([]rune(m.text)))
		fill, tx := "#212121", x1+w+4
		if w >= tw+8 {
			tx = x1 + 4
			if !m.dashed {
				fill = "#ffffff"
			}
		} else if tx+tw > tlWidth {
			tx = x1 - tw - 4
		}
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" fill=\"%s\" style=\"fill:%s\">%s</text>\n", tx, y+15, fill, fill, e(m.text))
	}
}

func errSuffix(err string) string {
	if err == "" {
		return ""
	}
	return " — " + err
}

// clipLeft keeps the end of s (node ids differ at their end; their scope prefix is shared).
func clipLeft(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// tickStep picks a round tick interval giving at most about 10 ticks over span.
func tickStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{
		10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
		200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second,
		10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
		10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
	} {
		if span/s <= 10 {
			return s
		}
	}
	return span / 10
}

func tickLabel(t, step time.Duration) string {
	switch {
	case step < time.Second:
		return fmt.Sprintf("%.2fs", t.Seconds())
	case step < time.Minute:
		return fmt.Sprintf("%gs", t.Seconds())
	default:
		return fmt.Sprintf("%gm", t.Minutes())
	}
}

// groupInOrder groups the indices of items by key, the keys in the order they first appear.
func groupInOrder[T any](items []T, key func(T) string) (keys []string, groups map[string][]int) {
	groups = map[string][]int{}
	for i, it := range items {
		k := key(it)
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], i)
	}
	return keys, groups
}
