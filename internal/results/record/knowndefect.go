package record

import (
	"fmt"
)

// A known product defect (KPD) is a place where the real kSQL-FlowNet disagrees with its own
// documented behaviour (its README, the product contract) and the scenario keeps its
// assertion: the catalogue (features/known-defects.yaml, loaded by the runner) names, per
// defect, the product package and version it applies to, the scenario, the assertion by which
// the scenario fails (its declared failure) and the evidence. A run of that product records
// a scenario failing by exactly that assertion as "failed — known product defect KPD-n":
// still failed, never passed nor hidden, but not a failure that makes the run red. A scenario
// that passes under an applying entry is flagged: the defect no longer reproduces and the
// entry must be removed or updated.
type KnownDefect struct {
	ID       string `json:"id" yaml:"id"`             // KPD-<n>
	Package  string `json:"package" yaml:"package"`   // the product package.json's name, e.g. @rex0220/ksql-flownet
	Version  string `json:"version" yaml:"version"`   // the product version it applies to, exactly
	Scenario string `json:"scenario" yaml:"scenario"` // the manifest id of the scenario that shows it
	// Assertion is the declared failure: a prefix of the `what` of the assertion by which
	// the scenario fails. Any other failure of the scenario is an ordinary one.
	Assertion string `json:"assertion" yaml:"assertion"`
	Evidence  string `json:"evidence" yaml:"evidence"` // a repository path, optionally #anchor, that shows it
	Summary   string `json:"summary" yaml:"summary"`   // the defect in one line
}

// Product is the product the entry applies to, as "package@version".
func (d KnownDefect) Product() string { return d.Package + "@" + d.Version }

// AppliesTo reports whether the entry applies to a run of p: only the real product, and only
// the package and version the entry names. The reference model never has known defects: a
// disagreement there is flowtest's own bug.
func (d KnownDefect) AppliesTo(p *Product) bool {
	return p != nil && p.Kind == ProductReal && p.Package == d.Package && p.Version == d.Version
}

// Known-defect outcomes (KnownDefectMark.Outcome).
const (
	// KDReproduced: the scenario failed by the entry's declared assertion and by nothing
	// else. Its status stays failed; the run's exit code does not count it.
	KDReproduced = "reproduced"
	// KDNoLongerReproduces: the scenario passed under an applying entry. Its status is
	// passed; the run's exit code is 1 until the catalogue is updated.
	KDNoLongerReproduces = "no-longer-reproduces"
	// KDOtherFailure: the scenario failed, but not (only) by the declared assertion: an
	// ordinary failure, marked so a reader sees the entry did not excuse it.
	KDOtherFailure = "other-failure"
)

// KnownDefectMark is what a scenario's record says of the known defect that applied to it.
type KnownDefectMark struct {
	ID        string `json:"id"`
	Product   string `json:"product"`   // package@version the entry applies to
	Assertion string `json:"assertion"` // the declared failure (prefix of an assertion's what)
	Evidence  string `json:"evidence"`
	Outcome   string `json:"outcome"` // reproduced | no-longer-reproduces | other-failure
}

// Excused: the scenario failed by its known defect's declared assertion; the run's exit
// code does not count it (it is still a failed scenario).
func (m *KnownDefectMark) Excused() bool { return m != nil && m.Outcome == KDReproduced }

// Stale: the scenario passed under an applying entry; the entry needs updating.
func (m *KnownDefectMark) Stale() bool { return m != nil && m.Outcome == KDNoLongerReproduces }

// StaleText is the flag of a known defect that no longer reproduces.
func (m *KnownDefectMark) StaleText() string {
	return fmt.Sprintf("%s no longer reproduces on %s: the product may be fixed; remove or update the entry", m.ID, m.Product)
}

// Text is the mark in a few words for the console's END line, the record and the page.
func (m *KnownDefectMark) Text() string {
	switch m.Outcome {
	case KDReproduced:
		return "known product defect " + m.ID
	case KDNoLongerReproduces:
		return m.StaleText()
	default:
		return fmt.Sprintf("not excused by %s: it failed otherwise than by its declared assertion %q", m.ID, m.Assertion)
	}
}

// Unexcused reports whether a scenario's outcome makes its run's exit code 1: a failure or a
// block that no applying known defect excuses, or a pass under a known defect that no longer
// reproduces (someone must update the catalogue).
func Unexcused(status string, m *KnownDefectMark) bool {
	switch status {
	case StatusFailed:
		return !m.Excused()
	case StatusBlocked:
		return true
	case StatusPassed:
		return m.Stale()
	}
	return false
}
