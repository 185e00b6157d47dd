package results

import (
	"fmt"
	"strings"
	"time"

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
