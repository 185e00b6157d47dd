package results

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ms(v int64) *int64 { return &v }

func TestComputeRunnerCost(t *testing.T) {
	var sums []ScenarioSummary
	for i := int64(1); i <= 20; i++ {
		sums = append(sums, ScenarioSummary{ID: "s" + string(rune('a'+i-1)), SetupMS: ms(i * 10)})
	}
	sums = append(sums, ScenarioSummary{ID: "not-run"}) // no setup: not counted
	c := ComputeRunnerCost(sums, 90*time.Second, 7500*time.Millisecond)
	assert.Equal(t, int64(90000), c.WallMS)
	assert.Equal(t, int64(7500), c.CPUMS)
	assert.Equal(t, int64(100), c.SetupP50MS) // nearest rank: the 10th of 20
	assert.Equal(t, int64(190), c.SetupP95MS) // the 19th of 20
	assert.Equal(t, int64(200), c.SetupMaxMS)
	require.Len(t, c.SlowestSetups, 3)
	assert.Equal(t, []ScenarioTime{{ID: "st", MS: 200}, {ID: "ss", MS: 190}, {ID: "sr", MS: 180}}, c.SlowestSetups)
	assert.Equal(t, "runner: wall 1m30s, CPU 7.5s, setup p50 100ms p95 190ms (slowest setups: st 200ms, ss 190ms, sr 180ms)", CostText(c))
}

func TestComputeRunnerCostWithoutSetups(t *testing.T) {
	c := ComputeRunnerCost([]ScenarioSummary{{ID: "x"}}, time.Second, 0)
	assert.Zero(t, c.SetupP95MS)
	assert.Empty(t, c.SlowestSetups)
}

// The one-line count says how many of the scenarios are extended ones, when any are.
func TestTotalsTextSaysWhatIsExtended(t *testing.T) {
	sums := []ScenarioSummary{{ID: "a", Status: StatusPassed}, {ID: "x", Status: StatusFailed, Extended: true}}
	tot := ComputeTotals(sums)
	if tot.Extended != 1 {
		t.Fatalf("extended = %d, want 1", tot.Extended)
	}
	if got, want := TotalsText(tot), "1 passed, 1 failed, 0 not run, of 2 (1 acceptance, 1 extended)"; got != want {
		t.Errorf("TotalsText = %q, want %q", got, want)
	}
	if got, want := TotalsText(ComputeTotals(sums[:1])), "1 passed, 0 failed, 0 not run, of 1"; got != want {
		t.Errorf("TotalsText = %q, want %q", got, want)
	}
}
