package render

import (
	"bytes"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"

	"github.com/ksqlflow/flowtest/internal/results/record"
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
	case record.StatusPassed, record.GatePass, record.WaitReached:
		return colPassed
	case record.StatusFailed, record.GateFail, record.WaitTimedOut:
		return colFailed
	case record.StatusBlocked:
		return colBlocked
	case record.StatusInterrupted, record.WaitGaveUp:
		return colInterrupted
	case record.StatusCarriedOver:
		return colCarried
	case record.GateIncomplete:
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

// Index renders index.html from the run's view, section by section; the page goes through
// the archive writer once more. It is built with fmt and html.EscapeString rather than
// html/template: the template escaper writes '+' as "&#43;", so the page would no longer be
// byte-identical to the archives already handed over (diff stats quote "(+)").
func Index(v *View) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	indexHeader(p, v)
	if v.gate != nil {
		renderGateHTML(p, v)
	}
	indexResults(p, v)
	indexEnvironment(p, v)
	indexTimelines(p, v)
	indexNotRun(p, v)
	indexAPIRequests(p, v)
	p("</body>\n</html>\n")
	return b.Bytes()
}

// indexHeader is the page's head and banner: title, times, product, stale known defects,
// the gate's verdict and the files beside the page.
func indexHeader(p func(string, ...any), v *View) {
	e := html.EscapeString
	run, gate, title := v.run, v.gate, v.title
	p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	p("<title>Acceptance record: %s</title>\n<style>%s</style>\n</head>\n<body>\n", e(title), indexStyle)
	p("<h1>Acceptance record: %s</h1>\n", e(title))
	p("<p class=\"muted\">%s to %s (%s) · state <b>%s</b> · %s</p>\n", e(fmtTime(run.Start)), e(fmtTime(run.End)), e(fmtDur(v.duration)), e(run.State), e(v.totals))
	if run.Product != nil {
		// Which FlowNet ran decides what every figure below means: a reference run tested
		// flowtest's model, not the product.
		colour := "#e6f4ea"
		if run.Product.Kind != record.ProductReal {
			colour = "#fff4ce"
		}
		p("<div class=\"verdict\" style=\"background:%s\"><b>Product: %s</b></div>\n", colour, e(run.Product.Label()))
	}
	for _, line := range record.StaleKnownDefects(run.Scenarios) {
		p("<div class=\"verdict\" style=\"background:%s\"><b>Warning</b>: %s</div>\n", colFailed, e(line))
	}
	if gate != nil {
		p("<div class=\"verdict\" style=\"background:%s\"><b>Release gate %s: %s</b>%s</div>\n", statusColour(gate.Verdict), e(gate.Gate), e(gate.Verdict), e(gate.VerdictWhy))
	}
	p("<p class=\"muted\">Files: <code>run.json</code>, <code>scenarios/&lt;id&gt;.json</code>, <code>README.md</code>, <code>cucumber.json</code>, <code>junit.xml</code>")
	if gate != nil {
		p(", <code>%s</code>", record.GateFile)
	}
	p("; all redacted. Times are UTC unless shown otherwise.</p>\n")
}

// indexResults is the table of the scenarios that ran, a failure's first observation in its row.
func indexResults(p func(string, ...any), v *View) {
	e := html.EscapeString
	run := v.run
	p("<h2 id=\"results\">Results</h2>\n<table>\n<tr><th>#</th><th>Scenario</th><th>Acceptance</th><th>Result</th><th>Duration</th><th>Record</th></tr>\n")
	n := 0
	for _, s := range run.Scenarios {
		if s.Status == record.StatusNotRun {
			continue // listed under Not run
		}
		n++
		// A failure says what failed right in the table: its first failing assertion.
		why := ""
		if rec := v.records[s.ID]; rec != nil && s.Status == record.StatusFailed {
			why = fmt.Sprintf("<div class=\"fail1\">%s</div>", e(rec.FirstObservation()))
		}
		if m := s.KnownDefect; m != nil {
			why = fmt.Sprintf("<div class=\"fail1\"><b>%s</b></div>", e(m.Text())) + why
		}
		p("<tr><td>%d</td><td><a href=\"#s-%s\">%s</a><div class=\"lim\">%s</div></td><td>%s</td><td>%s%s</td><td>%s</td><td><code>%s</code></td></tr>\n",
			n, e(anchor(s.ID)), e(s.ID), e(s.Name), e(Acceptance(s.Tags)), badge(s.Status), why, e(fmtDur(time.Duration(s.DurationMS)*time.Millisecond)), e(mdtext.OrDash(s.File)))
	}
	if n == 0 {
		p("<tr><td colspan=\"6\">No scenario ran.</td></tr>\n")
	}
	p("</table>\n")
}

func indexEnvironment(p func(string, ...any), v *View) {
	e := html.EscapeString
	p("<h2 id=\"environment\">Environment</h2>\n<table>\n")
	for _, r := range v.environment(true, false) {
		p("<tr><th>%s</th><td>%s</td></tr>\n", e(r.key), e(r.value))
	}
	p("</table>\n")
}

// indexTimelines is one section per scenario that ran: its known defect, first failure,
// where it is, its timeline and its failed assertions.
func indexTimelines(p func(string, ...any), v *View) {
	e := html.EscapeString
	p("<h2 id=\"timelines\">Timelines</h2>\n")
	p("<p class=\"legend\"><span><i style=\"background:%s\"></i>step passed / wait reached</span><span><i style=\"background:%s\"></i>failed / timed out</span><span><i style=\"background:%s\"></i>blocked</span><span><i style=\"background:%s\"></i>interrupted / gave up</span><span><i style=\"background:%s\"></i>process</span><span><i style=\"background:%s\"></i>wait</span><span><i style=\"background:%s\"></i>node attempt (kintone keeps minutes: a dashed bar is the span it lies in)</span><span><i style=\"background:%s\"></i>barrier hold</span></p>\n",
		colPassed, colFailed, colBlocked, colInterrupted, colProcess, colWait, colAttempt, colBarrier)
	ran := 0
	for _, s := range v.scen {
		if s.Status == record.StatusNotRun {
			continue
		}
		ran++
		p("<h3 id=\"s-%s\">%s %s</h3>\n", e(anchor(s.ID)), e(s.ID), badge(s.Status))
		if m := s.KnownDefect; m != nil {
			p("<p class=\"fail1\"><b>%s</b></p>\n", e(knownDefectDetail(m)))
		}
		if s.Status == record.StatusFailed {
			p("<p class=\"fail1\"><b>First failure</b>: %s</p>\n", e(s.FirstObservation()))
		}
		where := s.FeatureFile
		if where != "" && s.Line > 0 {
			where += fmt.Sprintf(":%d", s.Line)
		}
		p("<p class=\"muted\">%s · <code>%s</code> · %s</p>\n", e(mdtext.OrDash(s.Name)), e(mdtext.OrDash(where)), e(fmtDur(time.Duration(s.DurationMS)*time.Millisecond)))
		if s.Reason != "" && s.Status != record.StatusPassed {
			p("<p><b>%s</b>: %s</p>\n", e(s.Status), e(s.Reason))
		}
		p("%s", timelineSVG(s))
		if bad := record.FailedAssertions(s); len(bad) > 0 {
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
}

func indexNotRun(p func(string, ...any), v *View) {
	e := html.EscapeString
	p("<h2 id=\"not-run\">Not run</h2>\n")
	if rows := v.notRunRows(); len(rows) == 0 {
		p("<p>Every selected scenario ran.</p>\n")
	} else {
		p("<table>\n<tr><th>%s</th></tr>\n", strings.Join(notRunHeader, "</th><th>"))
		for _, r := range rows {
			p("<tr><td>%s</td><td>%s</td><td>%s</td></tr>\n", e(r[0]), e(r[1]), e(r[2]))
		}
		p("</table>\n")
	}
}

func indexAPIRequests(p func(string, ...any), v *View) {
	e := html.EscapeString
	if api := v.apiRequests(); len(api.rows) > 0 {
		p("<h2 id=\"api-requests\">API requests</h2>\n<p>kintone REST requests per app, the runner's own and its proxies' (kintone counts them per app and day).</p>\n")
		p("<table>\n<tr><th>App</th><th>Requests</th><th>By method</th><th>By origin</th><th>Throttled (429)</th><th>Estimated</th></tr>\n")
		for _, r := range api.rows {
			p("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", e(r.app), r.requests, e(r.methods), e(r.origins), r.throttled, r.estimate)
		}
		p("</table>\n")
		for _, line := range []string{api.budget, api.heavies} {
			if line != "" {
				p("<p>%s</p>\n", e(line))
			}
		}
	}
}

func renderGateHTML(p func(string, ...any), v *View) {
	e := html.EscapeString
	g := v.gate
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
	p("<tr><th>Scenarios</th><td>%s</td></tr>\n</table>\n", e(gateCountsText(g.Counts)))
	p("<table>\n<tr><th>Scenario</th><th>Required</th><th>Status</th><th>Evidence</th><th>Detail</th></tr>\n")
	for _, r := range v.gateRows() {
		ev := "—"
		if r.file != "" {
			ev = r.file
		}
		if co := r.carried; co != nil {
			ev = fmt.Sprintf("%s/%s sha256 %s (commit %s)", co.Archive, co.Record, co.SHA256, mdtext.OrDash(co.Commit))
		}
		id := e(r.id)
		if r.linked {
			id = fmt.Sprintf("<a href=\"#s-%s\">%s</a>", e(anchor(r.id)), id)
		}
		p("<tr><td>%s</td><td>%s</td><td>%s</td><td><code>%s</code></td><td>%s</td></tr>\n", id, r.required, badge(r.status), e(ev), e(r.detail))
	}
	p("</table>\n")
	for _, r := range g.CarryOver {
		state := carryOverStateText(r)
		p("<h3>Carry-over rule %s — %s</h3>\n<p>%s</p>\n<p class=\"muted\">Paths: <code>%s</code>. %s</p>\n", e(r.Series), e(state), e(r.Why), e(strings.Join(r.Paths, ", ")), e(r.Justification))
		for _, d := range r.Diffs {
			p("<p><code>%s</code></p>\n<pre>%s</pre>\n", e(d.Command), e(strings.TrimRight(gateDiffStatText(d), "\n")))
		}
	}
}

func badge(st string) string {
	return fmt.Sprintf("<span class=\"st\" style=\"background:%s\">%s</span>", statusColour(st), html.EscapeString(record.StatusWord(st)))
}

func anchor(id string) string { return record.SanitizeLabel(id) }
