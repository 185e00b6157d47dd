package results

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/results/internal/mdtext"
)

// renderReadme writes the acceptance record a person reads. run and scen are already redacted;
// the bytes go through the archive writer once more.
func renderReadme(run *Run, scen []*Scenario, gate *GateRecord) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	title := run.Label
	if title == "" {
		title = "all"
	}
	p("# Acceptance record: %s\n\n", mdtext.Inline(title))
	p("- Date: %s to %s (%s)\n", fmtTime(run.Start), fmtTime(run.End), fmtDur(run.End.Sub(run.Start)))
	p("- State: **%s**\n", mdtext.Inline(run.State))
	p("- Result: %s\n", TotalsText(run.Totals))
	if gate != nil {
		p("- Release gate %s: **%s**\n", mdtext.Inline(gate.Gate), mdtext.Inline(gate.Verdict))
	}
	files := "`run.json` (schema_version %d), `scenarios/<id>.json`, `cucumber.json`, `junit.xml`, `index.html`"
	if gate != nil {
		files += ", `" + GateFile + "`"
	}
	p("- Files: "+files+"; all redacted\n\n", run.SchemaVersion)
	if gate != nil {
		renderGateMarkdown(p, gate)
	}

	p("## Environment\n\n| | |\n| --- | --- |\n")
	row := func(k, v string) {
		if v != "" {
			p("| %s | %s |\n", mdtext.Cell(k), mdtext.Cell(v))
		}
	}
	row("Target", run.Target)
	row("Profile", run.Profile)
	row("OS", run.OS)
	row("Runner version", run.RunnerVersion)
	row("Tag expression", mdtext.OrDash(run.TagExpression))
	commit := run.SUT.Commit
	if commit == "" {
		commit = "unknown (not given with --sut-commit, not detected)"
	} else {
		if run.SUT.CommitSource != "" {
			commit += " (" + run.SUT.CommitSource + ")"
		}
		if run.SUT.Dirty {
			commit += ", uncommitted changes"
		}
	}
	row("SUT commit", commit)
	row("SUT branch", run.SUT.Branch)
	for _, k := range slices.Sorted(maps.Keys(run.SUT.Versions)) {
		row("Version: "+k, run.SUT.Versions[k])
	}
	for _, k := range slices.Sorted(maps.Keys(run.Environment)) {
		row(k, run.Environment[k])
	}

	p("\n## Run order\n\n")
	if len(run.RunOrder) == 0 {
		p("(none recorded)\n")
	}
	for i, id := range run.RunOrder {
		p("%d. %s\n", i+1, mdtext.Inline(id))
	}

	p("\n## Results\n\n| Scenario | Acceptance | Result | Duration | Evidence |\n| --- | --- | --- | --- | --- |\n")
	var notRun []ScenarioSummary
	for _, s := range run.Scenarios {
		if s.Status == StatusNotRun {
			notRun = append(notRun, s)
			if s.NotRunCategory == NotRunTag {
				continue // filtered scenarios are listed below, not as results
			}
		}
		result := s.Status
		if s.Status == StatusFailed || s.Status == StatusBlocked || s.Status == StatusInterrupted {
			result = "**" + s.Status + "**"
		}
		file := "—"
		if s.File != "" {
			file = "`" + s.File + "`"
		}
		p("| %s | %s | %s | %s | %s |\n", mdtext.Cell(s.ID), mdtext.Cell(Acceptance(s.Tags)), result, fmtDur(time.Duration(s.DurationMS)*time.Millisecond), file)
	}

	for _, group := range []struct {
		heading  string
		statuses []string
	}{
		{"Failures", []string{StatusFailed}},
		{"Blocked and interrupted (not failures of the SUT, not passes either)", []string{StatusBlocked, StatusInterrupted}},
	} {
		var list []*Scenario
		for _, s := range scen {
			if slices.Contains(group.statuses, s.Status) {
				list = append(list, s)
			}
		}
		if len(list) == 0 {
			continue
		}
		p("\n## %s\n\n", group.heading)
		for _, s := range list {
			if s.Status == StatusFailed {
				p("### %s\n\n", mdtext.Inline(s.ID))
			} else {
				p("### %s (%s)\n\n", mdtext.Inline(s.ID), s.Status)
			}
			if s.Reason != "" {
				p("%s\n\n", mdtext.Inline(s.Reason))
			}
			for _, st := range s.Steps {
				if st.Status == "failed" || st.Status == "undefined" || st.Status == "pending" {
					kw, name := stepParts(st)
					p("- step %s: `%s%s`: %s\n", st.Status, mdtext.Code(kw), mdtext.Code(name), mdtext.Inline(mdtext.OrDash(st.Error)))
				}
			}
			for _, a := range s.Assertions {
				if !a.OK {
					p("- %s: expected %s, saw %s\n", mdtext.Inline(a.What), mdtext.Inline(a.Expected), mdtext.Inline(a.Seen))
				}
			}
			if !s.Cleanup.OK {
				p("- cleanup failed: %s\n", mdtext.Inline(mdtext.OrDash(s.Cleanup.Error)))
			}
			p("\n")
		}
	}

	p("\n## Not run\n\n")
	if len(notRun) == 0 {
		p("Every selected scenario ran.\n")
	} else {
		p("| Scenario | Why | Detail |\n| --- | --- | --- |\n")
		for _, s := range notRun {
			p("| %s | %s | %s |\n", mdtext.Cell(s.ID), mdtext.Cell(notRunText(s.NotRunCategory)), mdtext.Cell(mdtext.OrDash(s.Reason)))
		}
	}

	p("\n## Evidence\n\n")
	if len(run.Evidence) == 0 {
		p("(no evidence rows recorded)\n")
	} else {
		p("| Criterion | Environment | Result | Limits | Scenarios |\n| --- | --- | --- | --- | --- |\n")
		for _, e := range run.Evidence {
			p("| %s | %s | %s | %s | %s |\n", mdtext.Cell(e.Criterion), mdtext.Cell(e.Environment), mdtext.Cell(e.Result), mdtext.Cell(mdtext.OrDash(e.Limits)), mdtext.Cell(strings.Join(e.Scenarios, ", ")))
		}
	}
	return b.Bytes()
}

// TotalsText is the one-line count of a run's scenarios.
func TotalsText(t Totals) string {
	parts := []string{fmt.Sprintf("%d passed", t.Passed), fmt.Sprintf("%d failed", t.Failed)}
	if t.Blocked > 0 {
		parts = append(parts, fmt.Sprintf("%d blocked", t.Blocked))
	}
	if t.Interrupted > 0 {
		parts = append(parts, fmt.Sprintf("%d interrupted", t.Interrupted))
	}
	parts = append(parts, fmt.Sprintf("%d not run", t.NotRun))
	return strings.Join(parts, ", ") + fmt.Sprintf(", of %d", t.Total)
}

func notRunText(cat string) string {
	switch cat {
	case NotRunTag:
		return "filtered by tag"
	case NotRunPlatform:
		return "other platform"
	case NotRunNotImplemented:
		return "not implemented"
	case NotRunInterrupted:
		return "interrupted"
	case "":
		return "not run"
	}
	return cat
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func fmtDur(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// Cucumber JSON, the subset CI report tools read.
type cukeFeature struct {
	URI      string     `json:"uri"`
	ID       string     `json:"id"`
	Keyword  string     `json:"keyword"`
	Name     string     `json:"name"`
	Line     int        `json:"line"`
	Elements []cukeScen `json:"elements"`
	Tags     []cukeTag  `json:"tags"`
	Desc     string     `json:"description"`
}

type cukeScen struct {
	ID      string     `json:"id"`
	Keyword string     `json:"keyword"`
	Name    string     `json:"name"`
	Desc    string     `json:"description,omitempty"`
	Line    int        `json:"line"`
	Type    string     `json:"type"`
	Tags    []cukeTag  `json:"tags"`
	Steps   []cukeStep `json:"steps"`
	After   []cukeHook `json:"after,omitempty"`
}

// cukeHook is a hook result of a scenario (Cucumber JSON's "before"/"after" arrays).
type cukeHook struct {
	Match  map[string]string `json:"match"`
	Result cukeResult        `json:"result"`
}

type cukeTag struct {
	Name string `json:"name"`
	Line int    `json:"line"`
}

type cukeStep struct {
	Keyword string     `json:"keyword"`
	Name    string     `json:"name"`
	Line    int        `json:"line"`
	Result  cukeResult `json:"result"`
}

type cukeResult struct {
	Status   string `json:"status"`
	Duration int64  `json:"duration,omitempty"` // nanoseconds
	Error    string `json:"error_message,omitempty"`
}

func renderCucumber(scen []*Scenario) ([]byte, error) {
	byFeature := map[string]*cukeFeature{}
	var order []string
	for _, s := range scen {
		key := s.FeatureFile
		if key == "" {
			key = s.Feature
		}
		f, ok := byFeature[key]
		if !ok {
			f = &cukeFeature{URI: key, ID: slug(s.Feature), Keyword: "Feature", Name: s.Feature, Line: 1, Tags: []cukeTag{}}
			byFeature[key] = f
			order = append(order, key)
		}
		name := s.Name
		if name == "" {
			name = s.ID
		}
		cs := cukeScen{ID: slug(s.Feature) + ";" + slug(name), Keyword: "Scenario", Name: name, Line: s.Line, Type: "scenario", Tags: []cukeTag{}, Steps: []cukeStep{}}
		for _, t := range s.Tags {
			if !strings.HasPrefix(t, "@") {
				t = "@" + t
			}
			cs.Tags = append(cs.Tags, cukeTag{Name: t, Line: s.Line})
		}
		// Blocked and interrupted are neither passed nor failed: Cucumber JSON has no such
		// status, so the step that was cut short (and every later one) is skipped with the
		// reason as its message, and an after hook and the description say which it was.
		cut := s.Status == StatusBlocked || s.Status == StatusInterrupted
		for _, st := range s.Steps {
			status, msg := st.Status, st.Error
			if status == "" {
				status = "skipped"
			}
			if cut && status != "passed" {
				if status == "failed" && !strings.HasPrefix(msg, s.Status+":") {
					msg = strings.TrimSpace(s.Status + ": " + msg)
				}
				status = "skipped"
			}
			kw, name := stepParts(st)
			cs.Steps = append(cs.Steps, cukeStep{Keyword: kw, Name: name, Line: st.Line,
				Result: cukeResult{Status: status, Duration: st.DurationMS * int64(time.Millisecond), Error: msg}})
		}
		if cut {
			why := s.Reason
			if !strings.HasPrefix(why, s.Status+":") {
				why = strings.TrimSpace(s.Status + ": " + why)
			}
			cs.Desc = "flowtest status: " + why
			cs.After = append(cs.After, cukeHook{Match: map[string]string{"location": "flowtest:" + s.Status},
				Result: cukeResult{Status: "skipped", Error: why}})
		}
		// A scenario that failed outside its steps (cleanup, After hook) must not look green.
		if s.Status == StatusFailed && !anyStepFailed(s) {
			msg := s.Reason
			if !s.Cleanup.OK {
				msg = strings.TrimSpace("cleanup failed: " + s.Cleanup.Error + " " + msg)
			}
			cs.Steps = append(cs.Steps, cukeStep{Keyword: "After ", Name: "hook", Result: cukeResult{Status: "failed", Error: mdtext.OrDash(msg)}})
		}
		f.Elements = append(f.Elements, cs)
	}
	out := make([]*cukeFeature, 0, len(order))
	for _, k := range order {
		out = append(out, byFeature[k])
	}
	return json.Marshal(out)
}

// stepParts splits a step into its keyword (with the space after it) and its text. The
// runner records the whole line as the text ("And the run is …") with the keyword beside it
// ("And"); older records hold the text without the keyword.
func stepParts(st Step) (keyword, text string) {
	kw := strings.TrimSpace(st.Keyword)
	if kw != "" && strings.HasPrefix(st.Text, kw+" ") {
		return kw + " ", strings.TrimPrefix(st.Text, kw+" ")
	}
	if kw != "" {
		return kw + " ", st.Text
	}
	return "", st.Text
}

func anyStepFailed(s *Scenario) bool {
	for _, st := range s.Steps {
		if st.Status == "failed" {
			return true
		}
	}
	return false
}

func slug(s string) string { return strings.ToLower(SanitizeLabel(s)) }

// JUnit XML, the common Jenkins/GitLab/GitHub dialect.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// renderJUnit: one suite per feature; a test case per scenario written, plus scenarios not
// run for a reason other than the tag filter (as skipped), so CI shows what the gate missed.
func renderJUnit(run *Run, scen []*Scenario) ([]byte, error) {
	suites := map[string]*junitSuite{}
	dur := map[string]time.Duration{}
	var order []string
	suite := func(name string) *junitSuite {
		if name == "" {
			name = "flowtest"
		}
		s, ok := suites[name]
		if !ok {
			s = &junitSuite{Name: name}
			suites[name] = s
			order = append(order, name)
		}
		return s
	}
	written := map[string]bool{}
	var total time.Duration
	for _, s := range scen {
		written[s.ID] = true
		su := suite(s.Feature)
		d := time.Duration(s.DurationMS) * time.Millisecond
		total += d
		c := junitCase{Name: s.ID, Classname: orName(s.Series), Time: secs(d)}
		if s.Name != "" {
			c.Name = s.ID + ": " + s.Name
		}
		switch s.Status {
		case StatusFailed:
			c.Failure = &junitMessage{Message: mdtext.OrDash(firstLine(failureMessage(s))), Type: "failed", Text: failureMessage(s)}
			su.Failures++
		case StatusBlocked, StatusInterrupted:
			// Not a failure of the SUT, not a pass either: a JUnit error of its own type.
			msg := firstLine(s.Reason)
			if !strings.HasPrefix(msg, s.Status+":") {
				msg = strings.TrimSpace(s.Status + ": " + msg)
			}
			c.Error = &junitMessage{Message: msg, Type: s.Status, Text: s.Reason}
			su.Errors++
		case StatusNotRun:
			c.Skipped = &junitMessage{Message: mdtext.OrDash(s.Reason)}
			su.Skipped++
		}
		su.Tests++
		dur[su.Name] += d
		if su.Timestamp == "" && !s.Start.IsZero() {
			su.Timestamp = s.Start.UTC().Format("2006-01-02T15:04:05")
		}
		su.Cases = append(su.Cases, c)
	}
	for _, s := range run.Scenarios {
		if s.Status != StatusNotRun || written[s.ID] || s.NotRunCategory == NotRunTag {
			continue
		}
		su := suite(s.Feature)
		su.Tests++
		su.Skipped++
		su.Cases = append(su.Cases, junitCase{Name: s.ID, Classname: orName(s.Series), Time: "0.000",
			Skipped: &junitMessage{Message: strings.TrimSpace(notRunText(s.NotRunCategory) + ": " + s.Reason)}})
	}
	root := junitSuites{Name: "flowtest " + run.Label, Time: secs(total)}
	for _, n := range order {
		su := suites[n]
		su.Time = secs(dur[n])
		root.Tests += su.Tests
		root.Failures += su.Failures
		root.Errors += su.Errors
		root.Skipped += su.Skipped
		root.Suites = append(root.Suites, *su)
	}
	out, err := xml.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

func failureMessage(s *Scenario) string {
	var lines []string
	if s.Reason != "" {
		lines = append(lines, s.Reason)
	}
	for _, st := range s.Steps {
		if st.Status == "failed" {
			kw, name := stepParts(st)
			lines = append(lines, fmt.Sprintf("step %q failed: %s", kw+name, st.Error))
		}
	}
	for _, a := range s.Assertions {
		if !a.OK {
			lines = append(lines, fmt.Sprintf("%s: expected %s, saw %s", a.What, a.Expected, a.Seen))
		}
	}
	if !s.Cleanup.OK {
		lines = append(lines, "cleanup failed: "+s.Cleanup.Error)
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func orName(series string) string {
	if series == "" {
		return "flowtest"
	}
	return series
}
