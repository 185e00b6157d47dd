package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/steps"
)

// A stale exemption (its invariant held) becomes one warning line of the run, naming the
// scenario and the manifest; other notes and records without notes give none.
func TestStaleExemptionsAreWarned(t *testing.T) {
	recs := []*results.Scenario{
		{ID: "a", Notes: []results.Note{{What: "invariants", Detail: "checked over 3 writes"}, {What: steps.ExemptionStaleNote, Detail: "puts-fenced held over 3 writes: its exemption is not needed (why)"}}},
		nil,
		{ID: "b", Notes: []results.Note{{What: "invariant one-run-per-key exempted", Detail: "why; 1 violation(s)"}}},
	}
	assert.Equal(t, []string{"scenario a: stale invariant exemption in features/manifest.yaml: puts-fenced held over 3 writes: its exemption is not needed (why)"}, staleExemptions(recs))
}
