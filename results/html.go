package results

import (
	"bytes"
	"fmt"
	"html"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/results/internal/mdtext"
)

// IndexFile is the acceptance record as one self-contained HTML page: no script, no external
// asset (style sheet, font, image) of any kind; the timelines are inline SVG.
const IndexFile = "index.html"

// Colours of the page, one per status; the screenshot test looks for some of them.
const (
	colPassed      = "#2e7d32"
	colFailed      = "#c62828"
	colBlocked     = "#6a1b9a"
	colInterrupted = "#ef6c00"
	colNotRun      = "#9e9e9e"
	colCarried     = "#1565c0"
	colProcess     = "#455a64"
	colWait        = "#00838f"
	colBarrier     = "#ad1457"
	colAttempt     = "#5d4037"
)

func statusColour(st string) string {
	switch st {
	case StatusPassed, GatePass, WaitReached:
		return colPassed
	case StatusFailed, GateFail, WaitTimedOut:
		return colFailed
	case StatusBlocked:
		return colBlocked
	case StatusInterrupted, WaitGaveUp:
		return colInterrupted
	case StatusCarriedOver:
		return colCarried
	case GateIncomplete:
		return colInterrupted
	}
	return colNotRun
}

const indexStyle = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK JP",sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#212121;background:#fff;line-height:1.4}
h1{font-size:24px;margin:0 0 8px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}h3{font-size:16px;margin:18px 0 4px}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0}th,td{border:1px solid #ddd;padding:4px 6px;text-align:left;vertical-align:top}th{background:#f5f5f5}
code,pre{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:12px}pre{background:#f7f7f7;border:1px solid #e0e0e0;padding:8px;overflow-x:auto;white-space:pre}
.st{display:inline-block;padding:1px 7px;border-radius:9px;color:#fff;font-size:12px;font-weight:600}
.verdict{border-radius:6px;padding:12px 16px;color:#fff;margin:12px 0}.verdict b{font-size:22px;margin-right:12px}
.muted{color:#616161}.lim{font-size:12px;color:#616161}.fail1{font-size:12px;color:#c62828;margin:2px 0}
svg{display:block;margin:6px 0 2px;max-width:100%;height:auto}svg text{font-family:inherit;font-size:11px;fill:#212121}
.legend span{display:inline-block;margin-right:12px;font-size:12px}.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px;border-radius:2px}
`

// renderIndex renders index.html. run and scen are redacted already; the page goes through
// the archive writer once more.
func renderIndex(run *Run, scen []*Scenario, gate *GateRecord) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	e := html.EscapeString
	title := run.Label
	if title == "" {
		title = "all"
	}
	p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	p("<title>Acceptance record: %s</title>\n<style>%s</style>\n</head>\n<body>\n", e(title), indexStyle)
	p("<h1>Acceptance record: %s</h1>\n", e(title))
	p("<p class=\"muted\">%s to %s (%s) · state <b>%s</b> · %s</p>\n", e(fmtTime(run.Start)), e(fmtTime(run.End)), e(fmtDur(run.End.Sub(run.Start))), e(run.State), e(TotalsText(run.Totals)))
	if gate != nil {
		p("<div class=\"verdict\" style=\"background:%s\"><b>Release gate %s: %s</b>%s</div>\n", statusColour(gate.Verdict), e(gate.Gate), e(gate.Verdict), e(gate.VerdictWhy))
	}
	p("<p class=\"muted\">Files: <code>run.json</code>, <code>scenarios/&lt;id&gt;.json</code>, <code>README.md</code>, <code>cucumber.json</code>, <code>junit.xml</code>")
	if gate != nil {
		p(", <code>%s</code>", GateFile)
	}
	p("; all redacted. Times are UTC unless shown otherwise.</p>\n")

	if gate != nil {
		renderGateHTML(p, gate)
	}

	p("<h2 id=\"results\">Results</h2>\n<table>\n<tr><th>#</th><th>Scenario</th><th>Acceptance</th><th>Result</th><th>Duration</th><th>Record</th></tr>\n")
	var notRun []ScenarioSummary
	recs := map[string]*Scenario{}
	for _, s := range scen {
		recs[s.ID] = s
	}
	n := 0
	for _, s := range run.Scenarios {
		if s.Status == StatusNotRun {
			notRun = append(notRun, s)
			continue
		}
		n++
		// A failure says what failed right in the table: its first failing assertion.
		why := ""
		if rec := recs[s.ID]; rec != nil && s.Status == StatusFailed {
			why = fmt.Sprintf("<div class=\"fail1\">%s</div>", e(rec.FirstObservation()))
		}
		p("<tr><td>%d</td><td><a href=\"#s-%s\">%s</a><div class=\"lim\">%s</div></td><td>%s</td><td>%s%s</td><td>%s</td><td><code>%s</code></td></tr>\n",
			n, e(anchor(s.ID)), e(s.ID), e(s.Name), e(Acceptance(s.Tags)), badge(s.Status), why, e(fmtDur(time.Duration(s.DurationMS)*time.Millisecond)), e(mdtext.OrDash(s.File)))
	}
	if n == 0 {
		p("<tr><td colspan=\"6\">No scenario ran.</td></tr>\n")
	}
	p("</table>\n")

	p("<h2 id=\"environment\">Environment</h2>\n<table>\n")
	row := func(k, v string) {
		if v != "" {
			p("<tr><th>%s</th><td>%s</td></tr>\n", e(k), e(v))
		}
	}
	row("Target", run.Target)
	row("Profile", run.Profile)
	row("OS", run.OS)
	row("Runner version", run.RunnerVersion)
	row("Tag expression", mdtext.OrDash(run.TagExpression))
	row("Command", strings.Join(run.Command, " "))
	commit := run.SUT.Commit
	if commit == "" {
		commit = "unknown (not given with --sut-commit, not detected)"
	}
	row("SUT commit", commit)
	row("SUT branch", run.SUT.Branch)
	for _, k := range slices.Sorted(maps.Keys(run.SUT.Versions)) {
		row("Version: "+k, run.SUT.Versions[k])
	}
	for _, k := range slices.Sorted(maps.Keys(run.Environment)) {
		row(k, run.Environment[k])
	}
	p("</table>\n")

	p("<h2 id=\"timelines\">Timelines</h2>\n")
	p("<p class=\"legend\"><span><i style=\"background:%s\"></i>step passed / wait reached</span><span><i style=\"background:%s\"></i>failed / timed out</span><span><i style=\"background:%s\"></i>blocked</span><span><i style=\"background:%s\"></i>interrupted / gave up</span><span><i style=\"background:%s\"></i>process</span><span><i style=\"background:%s\"></i>wait</span><span><i style=\"background:%s\"></i>node attempt (kintone keeps minutes: a dashed bar is the span it lies in)</span><span><i style=\"background:%s\"></i>barrier hold</span></p>\n",
		colPassed, colFailed, colBlocked, colInterrupted, colProcess, colWait, colAttempt, colBarrier)
	ran := 0
	for _, s := range scen {
		if s.Status == StatusNotRun {
			continue
		}
		ran++
		p("<h3 id=\"s-%s\">%s %s</h3>\n", e(anchor(s.ID)), e(s.ID), badge(s.Status))
		if s.Status == StatusFailed {
			p("<p class=\"fail1\"><b>First failure</b>: %s</p>\n", e(s.FirstObservation()))
		}
		where := s.FeatureFile
		if where != "" && s.Line > 0 {
			where += fmt.Sprintf(":%d", s.Line)
		}
		p("<p class=\"muted\">%s · <code>%s</code> · %s</p>\n", e(mdtext.OrDash(s.Name)), e(mdtext.OrDash(where)), e(fmtDur(time.Duration(s.DurationMS)*time.Millisecond)))
		if s.Reason != "" && s.Status != StatusPassed {
			p("<p><b>%s</b>: %s</p>\n", e(s.Status), e(s.Reason))
		}
		b.WriteString(timelineSVG(s))
		var bad []Assertion
		for _, a := range s.Assertions {
			if !a.OK {
				bad = append(bad, a)
			}
		}
		if len(bad) > 0 {
			p("<table><tr><th>Failed assertion</th><th>Expected</th><th>Seen</th></tr>\n")
			for _, a := range bad {
				p("<tr><td>%s</td><td>%s</td><td>%s</td></tr>\n", e(a.What), e(a.Expected), e(a.Seen))
			}
			p("</table>\n")
		}
		if !s.Cleanup.OK {
			p("<p><b>cleanup failed</b>: %s</p>\n", e(mdtext.OrDash(s.Cleanup.Error)))
		}
	}
	if ran == 0 {
		p("<p>No scenario ran.</p>\n")
	}

	p("<h2 id=\"not-run\">Not run</h2>\n")
	if len(notRun) == 0 {
		p("<p>Every selected scenario ran.</p>\n")
	} else {
		p("<table>\n<tr><th>Scenario</th><th>Why</th><th>Detail</th></tr>\n")
		for _, s := range notRun {
			p("<tr><td>%s</td><td>%s</td><td>%s</td></tr>\n", e(s.ID), e(notRunText(s.NotRunCategory)), e(mdtext.OrDash(s.Reason)))
		}
		p("</table>\n")
	}
	p("</body>\n</html>\n")
	return b.Bytes()
}

func renderGateHTML(p func(string, ...any), g *GateRecord) {
	e := html.EscapeString
	p("<h2 id=\"gate\">Release gate %s</h2>\n", e(g.Gate))
	if g.Title != "" {
		p("<p>%s</p>\n", e(g.Title))
	}
	p("<table>\n")
	p("<tr><th>Verdict</th><td>%s %s</td></tr>\n", badge(g.Verdict), e(g.VerdictWhy))
	p("<tr><th>Definition</th><td><code>%s</code> (sha256 <code>%s</code>)</td></tr>\n", e(g.Definition), e(g.DefinitionSHA256))
	p("<tr><th>Required</th><td><code>%s</code></td></tr>\n", e(g.Required))
	p("<tr><th>SUT commit</th><td><code>%s</code>", e(mdtext.OrDash(g.SUT.Commit)))
	if g.SUT.Head != "" {
		p(" — <b>warning</b>: the SUT repository's HEAD is <code>%s</code>", e(g.SUT.Head))
	}
	p("</td></tr>\n")
	if g.Since != nil {
		p("<tr><th>Carried-over evidence from</th><td><code>%s</code> (SUT commit <code>%s</code>, target %s)</td></tr>\n", e(g.Since.Archive), e(mdtext.OrDash(g.Since.Commit)), e(mdtext.OrDash(g.Since.Target)))
	} else {
		p("<tr><th>Carried-over evidence from</th><td>none (no --since-archive): every carry-over series runs</td></tr>\n")
	}
	c := g.Counts
	p("<tr><th>Scenarios</th><td>%d — %d passed, %d carried over, %d failed, %d blocked, %d interrupted, %d not run</td></tr>\n</table>\n",
		c.Total, c.Passed, c.CarriedOver, c.Failed, c.Blocked, c.Interrupted, c.NotRun)
	p("<table>\n<tr><th>Scenario</th><th>Required</th><th>Status</th><th>Evidence</th><th>Detail</th></tr>\n")
	for _, s := range g.Scenarios {
		req, detail := s.requiredText(), s.detailText()
		ev := "—"
		if s.File != "" {
			ev = s.File
		}
		if co := s.CarriedOver; co != nil {
			ev = fmt.Sprintf("%s/%s sha256 %s (commit %s)", co.Archive, co.Record, co.SHA256, mdtext.OrDash(co.Commit))
		}
		id := e(s.ID)
		if s.File != "" && s.Status != StatusNotRun {
			id = fmt.Sprintf("<a href=\"#s-%s\">%s</a>", e(anchor(s.ID)), id)
		}
		p("<tr><td>%s</td><td>%s</td><td>%s</td><td><code>%s</code></td><td>%s</td></tr>\n", id, req, badge(s.Status), e(ev), e(detail))
	}
	p("</table>\n")
	for _, r := range g.CarryOver {
		state := r.stateText()
		p("<h3>Carry-over rule %s — %s</h3>\n<p>%s</p>\n<p class=\"muted\">Paths: <code>%s</code>. %s</p>\n", e(r.Series), e(state), e(r.Why), e(strings.Join(r.Paths, ", ")), e(r.Justification))
		for _, d := range r.Diffs {
			stat := d.Stat
			if strings.TrimSpace(stat) == "" {
				stat = "(no changes)"
			}
			p("<p><code>%s</code></p>\n<pre>%s</pre>\n", e(d.Command), e(strings.TrimRight(stat, "\n")))
		}
	}
}

func badge(st string) string {
	return fmt.Sprintf("<span class=\"st\" style=\"background:%s\">%s</span>", statusColour(st), html.EscapeString(statusWord(st)))
}

func anchor(id string) string { return SanitizeLabel(id) }

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

// timelineSVG draws one scenario on one time axis: its steps, the processes it started, the
// node attempts its runs left, its waits and its barrier holds.
func timelineSVG(s *Scenario) string {
	t0, t1 := s.Start, s.End
	grow := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if t0.IsZero() || t.Before(t0) && t0.Sub(t) < time.Minute {
			t0 = t
		}
		if t.After(t1) && t.Sub(t1) < time.Minute {
			t1 = t
		}
	}
	var lanes []lane
	// Steps, one lane.
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
		end := st.Start.Add(time.Duration(st.DurationMS) * time.Millisecond)
		grow(st.Start)
		grow(end)
		steps.marks = append(steps.marks, mark{from: st.Start, to: end, colour: statusColour(st.Status), kind: "tl-step",
			title: fmt.Sprintf("step %s: %s%s — %s; source: the runner's step times", st.Status, st.Text, errSuffix(st.Error), spanText(st.Start, end))})
	}
	if len(steps.marks) > 0 {
		lanes = append(lanes, steps)
	}
	// Processes, one lane each.
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
		grow(pr.Start)
		grow(to)
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
	// Node attempts, one lane per attempt (a node's attempts often share the same minutes),
	// nodes in order of first appearance; each within the process that ran it (attempts.go).
	ran := attemptProcesses(s)
	var nodes []string
	byNode := map[string][]int{}
	for i, a := range s.Attempts {
		if _, ok := byNode[a.Node]; !ok {
			nodes = append(nodes, a.Node)
		}
		byNode[a.Node] = append(byNode[a.Node], i)
	}
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
			from, to, exact := attemptWindow(s, a, ran[i])
			title := fmt.Sprintf("node %s attempt %d: %s, ran %s; ", a.Node, a.AttemptNo, text, took)
			if exact {
				title += fmt.Sprintf("%s; source: NODE_ATTEMPT started_at/finished_at", spanText(from, to))
			} else {
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
			l.marks = append(l.marks, mark{from: from, to: to, colour: colAttempt, dashed: !exact, text: text, kind: "tl-attempt", title: title})
			lanes = append(lanes, l)
		}
	}
	// Waits, packed into as few lanes as do not overlap.
	var waitLanes []lane
	var laneEnd []time.Time
	for _, w := range s.Waits {
		if w.Start.IsZero() {
			continue
		}
		to := w.Start.Add(time.Duration(w.ElapsedMS) * time.Millisecond)
		grow(w.Start)
		grow(to)
		col := colWait
		if w.Outcome != WaitReached {
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
	lanes = append(lanes, waitLanes...)
	// Barriers: one lane per barrier id; a hold runs from arrival to release.
	var barrierIDs []string
	byBarrier := map[string][]BarrierArrival{}
	for _, ba := range s.Barriers {
		if _, ok := byBarrier[ba.ID]; !ok {
			barrierIDs = append(barrierIDs, ba.ID)
		}
		byBarrier[ba.ID] = append(byBarrier[ba.ID], ba)
	}
	for _, id := range barrierIDs {
		// Labelled as the feature names it, with the process whose proxy holds it; the
		// scope-prefixed id (older records) differs only at its end.
		first := byBarrier[id][0]
		l := lane{label: "barrier " + clipLeft(id, 30)}
		if first.Name != "" {
			l.label = "barrier " + first.Name
			if first.Process != "" {
				l.label += " — " + first.Process
			}
		}
		for _, ba := range byBarrier[id] {
			grow(ba.At)
			m := mark{from: ba.At, to: ba.At, colour: colBarrier, diamond: true, kind: "tl-barrier",
				title: fmt.Sprintf("barrier %s (%s) held %s %s, status %d", mdtext.OrDash(ba.Name), ba.Phase, ba.Method, ba.Path, ba.Status)}
			if ba.Process != "" {
				m.title += ", in the fault proxy of " + ba.Process
			}
			if !ba.ReleasedAt.IsZero() {
				grow(ba.ReleasedAt)
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
	if len(lanes) == 0 {
		return "<p class=\"muted\">(nothing to draw: the record holds no timed step, process, attempt, wait or barrier)</p>\n"
	}
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
	fmt.Fprintf(&b, "<svg role=\"img\" aria-label=\"timeline of %s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", e(s.ID), tlWidth, height, tlWidth, height)
	fmt.Fprintf(&b, "<title>Timeline of %s: %s from %s</title>\n", e(s.ID), e(fmtDur(span)), e(t0.UTC().Format("15:04:05.000")))
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
			x1, x2 := x(m.from), x(m.to)
			if m.diamond {
				cy := float64(y) + tlLane/2
				fmt.Fprintf(&b, "<path class=\"%s\" d=\"M%.1f %.1f l5 5 l-5 5 l-5 -5 z\" fill=\"%s\"><title>%s</title></path>\n", m.kind, x1, cy-5, m.colour, e(m.title))
				continue
			}
			w := math.Max(x2-x1, 2)
			extra := ""
			if m.dashed {
				extra = fmt.Sprintf(" fill-opacity=\"0.35\" stroke=\"%s\" stroke-dasharray=\"4 3\"", m.colour)
			}
			fmt.Fprintf(&b, "<rect class=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"2\" fill=\"%s\"%s><title>%s</title></rect>\n",
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
				fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%d\" fill=\"%s\" style=\"fill:%s\">%s</text>\n", tx, y+15, fill, fill, e(m.text))
			}
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
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
