package record

import (
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/results/internal/mdtext"
)

// FirstObservation is the first failing assertion (expected/seen), else the failing step,
// else the record's reason.
func (s *Scenario) FirstObservation() string {
	for _, a := range s.Assertions {
		if !a.OK {
			return fmt.Sprintf("%s: expected %s, saw %s", a.What, a.Expected, a.Seen)
		}
	}
	for _, st := range s.Steps {
		if st.Status == "failed" {
			return fmt.Sprintf("step %q: %s", st.Text, st.Error)
		}
	}
	if !s.Cleanup.OK {
		return "cleanup failed: " + s.Cleanup.Error
	}
	return mdtext.OrDash(s.Reason)
}

// ReasonLine is the first line of the record's reason: what the console's END line, the
// JUnit message and the repeat and explore summaries show of it.
func (s *Scenario) ReasonLine() string {
	line, _, _ := strings.Cut(s.Reason, "\n")
	return line
}

// FailedAssertions are the assertions of s that did not hold.
func FailedAssertions(s *Scenario) []Assertion {
	var bad []Assertion
	for _, a := range s.Assertions {
		if !a.OK {
			bad = append(bad, a)
		}
	}
	return bad
}
