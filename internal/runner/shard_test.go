package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/merge"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

func TestParseShard(t *testing.T) {
	k, n, err := ParseShard("2/3")
	require.NoError(t, err)
	assert.Equal(t, [2]int{2, 3}, [2]int{k, n})
	for _, bad := range []string{"", "3", "0/3", "4/3", "a/b", "1/0", "-1/2"} {
		_, _, err := ParseShard(bad)
		assert.Error(t, err, bad)
	}
}

// Every selected scenario lands in exactly one shard, the same way every time, and the
// durations balance the shards (longest first to the least loaded).
func TestShardIsAPartitionBalancedByDurations(t *testing.T) {
	var items []Item
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		items = append(items, Item{Entry: Entry{ID: id}, Run: true})
	}
	items = append(items, Item{Entry: Entry{ID: "x"}, Run: false, Reason: ReasonNotImplemented})
	d := map[string]time.Duration{"a": 70 * time.Second, "b": 10 * time.Second, "c": 40 * time.Second, "d": 30 * time.Second, "e": 5 * time.Second, "f": 5 * time.Second, "g": 10 * time.Second}
	owner := map[string]int{}
	var loads [3]time.Duration
	for k := 1; k <= 3; k++ {
		sh := Shard(items, k, 3, d)
		again := Shard(items, k, 3, d)
		assert.Equal(t, sh, again, "deterministic")
		for _, it := range sh {
			if it.Run {
				_, dup := owner[it.ID]
				assert.False(t, dup, "%s in two shards", it.ID)
				owner[it.ID] = k
				loads[k-1] += d[it.ID]
			} else if it.ID != "x" {
				assert.True(t, results.IsOtherShard(it.Reason), it.Reason)
			} else {
				assert.Equal(t, ReasonNotImplemented, it.Reason)
			}
		}
	}
	assert.Len(t, owner, 7)
	// 170 s over 3 shards: LPT gives 70 | 40+10+5 | 30+10+5 (+…) — no shard above 70 s.
	for _, l := range loads {
		assert.LessOrEqual(t, l, 70*time.Second, "loads %v", loads)
	}
	c := Count(Shard(items, 1, 3, d))
	assert.Equal(t, 1, c.Runnable)
}

// Without durations the declared lease-wait need weighs more: the three long scenarios go to
// three shards rather than by count to whichever shard is dealt them.
func TestShardSpreadsLeaseWaitsWithoutDurations(t *testing.T) {
	// In run order every third is long: dealt by count (round robin), all three would land
	// in shard 1.
	var items []Item
	for _, id := range []string{"l1", "a", "b", "l2", "c", "d", "l3", "e", "f"} {
		it := Item{Entry: Entry{ID: id}, Run: true}
		if id[0] == 'l' {
			it.Needs = Needs{NeedLeaseWait}
		}
		items = append(items, it)
	}
	for k := 1; k <= 3; k++ {
		var long []string
		for _, it := range Shard(items, k, 3, nil) {
			if it.Run && it.Needs.Has(NeedLeaseWait) {
				long = append(long, it.ID)
			}
		}
		assert.Len(t, long, 1, "shard %d/3 has lease waits %v", k, long)
	}
}

// Shard 1/3 + 2/3 + 3/3 merged equals the unsharded selection: ids, statuses, totals.
func TestMergedShardsEqualTheUnshardedRun(t *testing.T) {
	fsys := selfFeatures(nil)
	items := plan(t, fsys, "")
	whole := execute(t, fsys, items, Options{})
	var in []merge.MergeInput
	for k := 1; k <= 3; k++ {
		r := execute(t, fsys, Shard(items, k, 3, nil), Options{})
		scen, run, err := results.ReadArchive(r.archive.Dir())
		require.NoError(t, err)
		in = append(in, merge.MergeInput{Dir: r.archive.Dir(), Run: run, Scenarios: scen})
	}
	m, err := merge.Merge(in)
	require.NoError(t, err)
	_, wrun, err := results.ReadArchive(whole.archive.Dir())
	require.NoError(t, err)
	type row struct{ ID, Status, Reason string }
	rows := func(sums []results.ScenarioSummary) []row {
		var out []row
		for _, s := range sums {
			out = append(out, row{s.ID, s.Status, s.Reason})
		}
		return out
	}
	assert.Equal(t, rows(wrun.Scenarios), rows(m.Run.Scenarios))
	wt, mt := wrun.Totals, m.Run.Totals
	wt.DurationMS, mt.DurationMS = 0, 0
	assert.Equal(t, wt, mt)
	assert.Equal(t, *wrun.ExitCode, *m.Run.ExitCode)

	// A missing shard is refused, and so are overlapping shards.
	_, err = merge.Merge(in[:2])
	assert.ErrorContains(t, err, "missing")
	_, err = merge.Merge([]merge.MergeInput{in[0], in[0]})
	assert.Error(t, err)
}

// --durations-from is an archive handed to a command like any other: one that does not hold
// together (here a member that links out of it) is refused naming the member, never read for
// the plan.
func TestDurationsOfReadsOnlyAVerifiedArchive(t *testing.T) {
	a, err := results.Create(t.TempDir(), "d", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), redact.New(nil, nil))
	require.NoError(t, err)
	a.SetOrder([]string{"s1"})
	start := time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC)
	require.NoError(t, a.WriteScenario(&results.Scenario{SchemaVersion: results.SchemaVersion, ID: "s1", Feature: "f", Series: "m5",
		Tags: []string{"@s1"}, Status: results.StatusPassed, Start: start, End: start.Add(2 * time.Second), DurationMS: 2000}))
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", RunOrder: []string{"s1"}, End: start.Add(3 * time.Second)}))

	d, err := DurationsOf(a.Dir())
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Duration{"s1": 2 * time.Second}, d)

	outside := filepath.Join(t.TempDir(), "elsewhere.txt")
	require.NoError(t, os.WriteFile(outside, []byte("x"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(a.Dir(), "extra.txt")))
	_, err = DurationsOf(a.Dir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "extra.txt")
}
