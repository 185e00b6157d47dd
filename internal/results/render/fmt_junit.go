package render

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// JUnit XML, the common Jenkins/GitLab/GitHub dialect.
type JUnitSuites struct {
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

// JUnit: one suite per feature; a test case per selected scenario written, plus selected
// scenarios not run without a record (as skipped), so CI shows what the gate missed. What
// the selection left out was never meant to run: no test case, not even a skipped one.
func JUnit(run *record.Run, scen []*record.Scenario) ([]byte, error) {
	scen = selectedRecords(run, scen)
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
		case record.StatusFailed:
			msg, _, _ := strings.Cut(failureMessage(s), "\n")
			c.Failure = &junitMessage{Message: mdtext.OrDash(msg), Type: "failed", Text: failureMessage(s)}
			su.Failures++
		case record.StatusBlocked, record.StatusInterrupted:
			// Not a failure of the SUT, not a pass either: a JUnit error of its own type.
			msg := s.ReasonLine()
			if !strings.HasPrefix(msg, s.Status+":") {
				msg = strings.TrimSpace(s.Status + ": " + msg)
			}
			c.Error = &junitMessage{Message: msg, Type: s.Status, Text: s.Reason}
			su.Errors++
		case record.StatusNotRun:
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
		if s.Status != record.StatusNotRun || written[s.ID] || s.NotSelected() {
			continue
		}
		su := suite(s.Feature)
		su.Tests++
		su.Skipped++
		su.Cases = append(su.Cases, junitCase{Name: s.ID, Classname: orName(s.Series), Time: "0.000",
			Skipped: &junitMessage{Message: strings.TrimSpace(notRunText(s.NotRunCategory) + ": " + s.Reason)}})
	}
	root := JUnitSuites{Name: "flowtest " + run.Label, Time: secs(total)}
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

func failureMessage(s *record.Scenario) string {
	var lines []string
	if m := s.KnownDefect; m != nil {
		// Still a failure; its first line (the message) says which known defect it is.
		lines = append(lines, m.Text()+" ("+m.Product+", evidence "+m.Evidence+")")
	}
	if s.Reason != "" {
		lines = append(lines, s.Reason)
	}
	for _, st := range s.Steps {
		if st.Status == "failed" {
			kw, name := stepParts(st)
			// The reason is often this very line (the runner's first failure): once is enough.
			if line := fmt.Sprintf("step %q failed: %s", kw+name, st.Error); !slices.Contains(lines, line) {
				lines = append(lines, line)
			}
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

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func orName(series string) string {
	if series == "" {
		return "flowtest"
	}
	return series
}

// selectedRecords are the records of scen that the run's selection did not leave out (by
// run.json's rows): the CI formats list only what was meant to run.
func selectedRecords(run *record.Run, scen []*record.Scenario) []*record.Scenario {
	left := map[string]bool{}
	for _, s := range run.Scenarios {
		if s.NotSelected() {
			left[s.ID] = true
		}
	}
	out := make([]*record.Scenario, 0, len(scen))
	for _, s := range scen {
		if !left[s.ID] {
			out = append(out, s)
		}
	}
	return out
}
