package runner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results"
)

// DefaultShardWeight is the weight of a scenario with no known duration (no --durations-from,
// or the archive did not run it): about a typical sandbox scenario.
const DefaultShardWeight = 30 * time.Second

// LeaseWaitShardWeight is that weight for a scenario that declares the lease-wait need: it
// waits for a lease to become a stale candidate (lease + up to 60 s), 55–80 s measured, so
// without durations the long ones are spread over the shards instead of dealt by count.
const LeaseWaitShardWeight = 90 * time.Second

// EstimatedDuration is a scenario's expected run time: known when an earlier run measured it,
// else LeaseWaitShardWeight for one that needs lease-wait and DefaultShardWeight otherwise.
func EstimatedDuration(needs Needs, known time.Duration) time.Duration {
	switch {
	case known > 0:
		return known
	case needs.Has(NeedLeaseWait):
		return LeaseWaitShardWeight
	default:
		return DefaultShardWeight
	}
}

// ParseShard parses "K/N" (1 <= K <= N).
func ParseShard(s string) (k, n int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if ok {
		k, err1 := strconv.Atoi(a)
		n, err2 := strconv.Atoi(b)
		if err1 == nil && err2 == nil && n >= 1 && k >= 1 && k <= n {
			return k, n, nil
		}
	}
	return 0, 0, fmt.Errorf("want K/N with 1 <= K <= N, e.g. 2/3")
}

// Shard keeps, of the items selected to run, those of shard k of n and marks the others not
// run ("in another shard: j/n"). The split is deterministic — the same selection, n and
// durations give every shard the same plan on every machine — and balanced: scenarios are
// dealt longest first (by durations, else LeaseWaitShardWeight for a scenario that needs
// lease-wait and DefaultShardWeight for the others; ties in run order) to the
// shard with the least total so far (ties to the lowest shard). Run order inside a shard is
// the manifest's.
func Shard(items []Item, k, n int, durations map[string]time.Duration) []Item {
	type entry struct {
		idx int
		w   time.Duration
	}
	var sel []entry
	for i, it := range items {
		if it.Run {
			sel = append(sel, entry{i, EstimatedDuration(it.Needs, durations[it.ID])})
		}
	}
	sort.SliceStable(sel, func(a, b int) bool { return sel[a].w > sel[b].w })
	load := make([]time.Duration, n)
	owner := map[int]int{}
	for _, e := range sel {
		best := 0
		for j := 1; j < n; j++ {
			if load[j] < load[best] {
				best = j
			}
		}
		load[best] += e.w
		owner[e.idx] = best + 1
	}
	out := make([]Item, len(items))
	copy(out, items)
	for i := range out {
		if j, ok := owner[i]; ok && j != k {
			out[i].Run = false
			out[i].Reason = fmt.Sprintf("%s: %d/%d", results.ReasonOtherShardPrefix, j, n)
		}
	}
	return out
}

// DurationsOf reads the scenario durations of a previous archive (the scenarios that ran),
// verified first like every archive a command is handed: a shard plan is no better than them.
func DurationsOf(archiveDir string) (map[string]time.Duration, error) {
	_, run, err := results.ReadVerified(archiveDir)
	if err != nil {
		return nil, err
	}
	if run == nil {
		return nil, fmt.Errorf("%s has no run.json", archiveDir)
	}
	out := map[string]time.Duration{}
	for _, s := range run.Scenarios {
		if s.Status != results.StatusNotRun && s.DurationMS > 0 {
			out[s.ID] = time.Duration(s.DurationMS) * time.Millisecond
		}
	}
	return out, nil
}

// startOrder is the order in which the items marked to run start: run order one at a time;
// with more than one worker, longest expected first (o.Expected, else Status.Expected, else
// EstimatedDuration's weights), ties in run order. Records and reports keep run order
// whatever the start order (Archive.SetOrder).
func startOrder(o Options) []int {
	var order []int
	for i, it := range o.Items {
		if it.Run {
			order = append(order, i)
		}
	}
	if o.Concurrency <= 1 {
		return order
	}
	expected := o.Expected
	if expected == nil && o.Status != nil {
		expected = o.Status.Expected
	}
	weight := func(i int) time.Duration {
		it := o.Items[i]
		return EstimatedDuration(it.Needs, expected[it.ID])
	}
	sort.SliceStable(order, func(a, b int) bool { return weight(order[a]) > weight(order[b]) })
	return order
}
