package results

import (
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/results/internal/mdtext"
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

// Acceptance lists the acceptance numbers from @acc-N tags.
func Acceptance(tags []string) string {
	var acc []string
	for _, t := range tags {
		t = strings.TrimPrefix(t, "@")
		if strings.HasPrefix(t, "acc-") {
			acc = append(acc, strings.TrimPrefix(t, "acc-"))
		}
	}
	return mdtext.OrDash(strings.Join(acc, ", "))
}
