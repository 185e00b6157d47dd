package results

import (
	"strings"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// Applying are the entries of defects that apply to a run of p.
func Applying(defects []KnownDefect, p *Product) []KnownDefect {
	var out []KnownDefect
	for _, d := range defects {
		if d.AppliesTo(p) {
			out = append(out, d)
		}
	}
	return out
}

// JudgeKnownDefect marks rec with the first of applying that names its scenario. Only a
// failed or passed record is judged (a blocked, interrupted or not-run scenario says nothing
// about the product). A failed record reproduces the defect when it failed by the declared
// assertion and by nothing else: at least one assertion failed, every failed assertion's
// what starts with the declared prefix, the failing step's error is that assertion's, and
// the cleanup held.
func JudgeKnownDefect(rec *Scenario, applying []KnownDefect) {
	rec.KnownDefect = nil
	if rec.Status != StatusFailed && rec.Status != StatusPassed {
		return
	}
	for _, d := range applying {
		if d.Scenario != rec.ID {
			continue
		}
		m := &KnownDefectMark{ID: d.ID, Product: d.Product(), Assertion: d.Assertion, Evidence: d.Evidence}
		switch {
		case rec.Status == StatusPassed:
			m.Outcome = KDNoLongerReproduces
		case failsBy(rec, d.Assertion):
			m.Outcome = KDReproduced
		default:
			m.Outcome = KDOtherFailure
		}
		rec.KnownDefect = m
		return
	}
}

// failsBy reports whether rec failed by the assertion whose what starts with prefix, and by
// nothing else.
func failsBy(rec *Scenario, prefix string) bool {
	bad := record.FailedAssertions(rec)
	if len(bad) == 0 || !rec.Cleanup.OK || prefix == "" {
		return false
	}
	for _, a := range bad {
		if !strings.HasPrefix(a.What, prefix) {
			return false
		}
	}
	// The failing step failed by that assertion (State.Assert's error is "<what>: expected
	// …"), not by a timeout or an error after it, and no hook failed.
	failing := 0
	for _, st := range rec.Steps {
		switch st.Status {
		case "passed", "skipped":
		case "failed":
			failing++
			if !strings.Contains(st.Error, bad[0].What+": expected ") {
				return false
			}
		default: // undefined, pending, ambiguous
			return false
		}
	}
	return failing == 1 && strings.Contains(rec.Reason, bad[0].What+": expected ")
}

// Unexcused is record.Unexcused: whether a scenario's outcome makes its run's exit code 1.
func Unexcused(status string, m *KnownDefectMark) bool { return record.Unexcused(status, m) }
