package results

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ComputeRunnerCost summarises the setup times of the summaries (those that have one) with the
// runner's wall and CPU time.
func ComputeRunnerCost(sums []ScenarioSummary, wall, cpu time.Duration) *RunnerCost {
	c := &RunnerCost{WallMS: wall.Milliseconds(), CPUMS: cpu.Milliseconds()}
	var setups []ScenarioTime
	for _, s := range sums {
		if s.SetupMS != nil {
			setups = append(setups, ScenarioTime{ID: s.ID, MS: *s.SetupMS})
		}
	}
	if len(setups) == 0 {
		return c
	}
	ms := make([]int64, len(setups))
	for i, s := range setups {
		ms[i] = s.MS
	}
	slices.Sort(ms)
	c.SetupP50MS, c.SetupP95MS, c.SetupMaxMS = percentile(ms, 50), percentile(ms, 95), ms[len(ms)-1]
	slices.SortStableFunc(setups, func(a, b ScenarioTime) int { return int(b.MS - a.MS) })
	c.SlowestSetups = setups[:min(3, len(setups))]
	return c
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []int64, p int) int64 {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank, 1)-1]
}

// CostText is the closing line's account of the runner's own cost.
func CostText(c *RunnerCost) string {
	if c == nil {
		return ""
	}
	d := func(ms int64) string {
		return (time.Duration(ms) * time.Millisecond).Round(10 * time.Millisecond).String()
	}
	line := fmt.Sprintf("runner: wall %s, CPU %s, setup p50 %s p95 %s", d(c.WallMS), d(c.CPUMS), d(c.SetupP50MS), d(c.SetupP95MS))
	if len(c.SlowestSetups) > 0 {
		var slow []string
		for _, s := range c.SlowestSetups {
			slow = append(slow, s.ID+" "+d(s.MS))
		}
		line += " (slowest setups: " + strings.Join(slow, ", ") + ")"
	}
	return line
}
