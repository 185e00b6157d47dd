package cli

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// The ETA's durations come from the newest archive of the same selection and target under
// --out, never from the run's own (just created) archive, nor from one where nothing ran.
func TestLastArchiveOfTheSameSelection(t *testing.T) {
	out := t.TempDir()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	mk := func(tags, target string, ran bool, minute int) string {
		a, err := results.Create(out, "x", at.Add(time.Duration(minute)*time.Minute), redact.New(nil, nil))
		require.NoError(t, err)
		st := results.StatusNotRun
		if ran {
			st = results.StatusPassed
		}
		require.NoError(t, a.WriteScenario(&results.Scenario{ID: "m5-resume", Status: st, DurationMS: 900}))
		require.NoError(t, a.Finish(&results.Run{Target: target, TagExpression: tags, End: time.Now()}))
		return a.Dir()
	}
	older := mk("@m5", "sandbox", true, 0)
	newer := mk("@m5", "sandbox", true, 1)
	mk("@m5", "live", true, 2)           // another target
	mk("@m6", "sandbox", true, 3)        // another selection
	mk("@m5", "sandbox", false, 4)       // nothing ran
	own := mk("@m5", "sandbox", true, 5) // the run's own archive
	assert.Equal(t, newer, lastArchiveOf(out, "@m5", "sandbox", own))
	assert.Equal(t, newer, lastArchiveOf(out, "@m5", "sandbox", own+"/../"+filepath.Base(own)), "the own archive is skipped however it is spelt")
	assert.Equal(t, own, lastArchiveOf(out, "@m5", "sandbox", older), "newest first")
	assert.Equal(t, "", lastArchiveOf(out, "@p2-16", "sandbox", own))
	assert.Equal(t, "", lastArchiveOf(t.TempDir(), "@m5", "sandbox", ""))
}
