package evidence

import (
	"strings"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/internal/archivetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func archiveOf(t *testing.T, commit string, code int, statuses map[string]string) string {
	t.Helper()
	a, err := results.Create(t.TempDir(), "x", time.Now(), archivetest.Redactor())
	require.NoError(t, err)
	var order []string
	for _, id := range []string{"s-fixed", "s-always", "s-broken", "s-blocked", "s-gone", "s-new"} {
		st, ok := statuses[id]
		if !ok {
			continue
		}
		order = append(order, id)
		require.NoError(t, a.WriteScenario(archivetest.Scenario(id, st)))
	}
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", SUT: results.SUTIdentity{Commit: commit}, RunOrder: order,
		Command: []string{"flowtest", "run", "--tags", "@s-fixed or @s-always", "--sut-commit", commit}, ExitCode: &code, End: time.Now()}))
	return a.Dir()
}

// The seed's rule: pass only when it failed before and passes after; passing on both sides
// does not demonstrate the fix; not run and blocked are never pass.
func TestCompareArchivesRows(t *testing.T) {
	before := archiveOf(t, "c0ffee0", 1, map[string]string{
		"s-fixed": results.StatusFailed, "s-always": results.StatusPassed, "s-broken": results.StatusPassed, "s-blocked": results.StatusFailed, "s-gone": results.StatusFailed,
	})
	after := archiveOf(t, "c0ffee1", 1, map[string]string{
		"s-fixed": results.StatusPassed, "s-always": results.StatusPassed, "s-broken": results.StatusFailed, "s-blocked": results.StatusBlocked, "s-new": results.StatusPassed,
	})
	ba, err := CompareArchives(before, after, map[string]string{"s-fixed": "one run only"})
	require.NoError(t, err)
	got := map[string]BeforeAfterRow{}
	for _, r := range ba.Rows {
		got[r.Scenario] = r
	}
	assert.Equal(t, EvidencePass, got["s-fixed"].Status)
	assert.Equal(t, EvidenceNotDemonstrated, got["s-always"].Status)
	assert.Equal(t, EvidenceFail, got["s-broken"].Status)
	assert.Equal(t, EvidenceBlocked, got["s-blocked"].Status)
	assert.Equal(t, EvidenceNotRun, got["s-gone"].Status, "no after run")
	assert.Equal(t, EvidenceNotRun, got["s-new"].Status, "no failing run before")

	fixed := got["s-fixed"]
	assert.Equal(t, "acceptance 2 (s-fixed): cancel and claim race", fixed.Criterion)
	assert.Equal(t, "features/p2-16/s-fixed.feature:3", fixed.Test)
	assert.Equal(t, "c0ffee0", fixed.Before.Revision)
	assert.Equal(t, "c0ffee1", fixed.After.Revision)
	assert.Equal(t, "1", fixed.Before.ExitCode)
	assert.Equal(t, "flowtest run --tags '@s-fixed or @s-always' --sut-commit c0ffee0", fixed.Before.Command)
	assert.Equal(t, "failed: NETWORK_RUN count in app=app:state: expected 1, saw 2", fixed.Before.Observed)
	assert.Equal(t, "passed: 1/1 assertions held", fixed.After.Observed)
	assert.True(t, strings.HasSuffix(fixed.Before.Record, "/scenarios/s-fixed.json"), fixed.Before.Record)
	assert.Contains(t, strings.Join(fixed.Limits, "; "), "scenario: one run only")
	assert.Contains(t, strings.Join(fixed.Limits, "; "), "sandbox")
	assert.Contains(t, strings.Join(got["s-always"].Limits, "; "), "passed before the fix as well")

	md := string(ba.Markdown())
	assert.Contains(t, md, "| Criterion / test | Before | After | Status | Limits |")
	assert.Contains(t, md, "| pass |")
	assert.Contains(t, md, "**does not demonstrate the fix**")
	assert.Contains(t, md, "1 pass, 1 fail, 1 blocked, 2 not run, 1 do not demonstrate the fix")

	// The same revision on both sides is called out.
	same := archiveOf(t, "c0ffee0", 0, map[string]string{"s-fixed": results.StatusPassed})
	ba, err = CompareArchives(before, same, nil)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(ba.Rows[0].Limits, "; "), "same SUT revision")

	_, err = CompareArchives(t.TempDir(), after, nil)
	require.ErrorContains(t, err, "--before")
}
