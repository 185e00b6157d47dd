package render

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// How a node attempt is related to the FlowNet process that ran it, for the timeline.
//
// A NODE_ATTEMPT's started_at/finished_at are kintone DATETIMEs, whole minutes: the attempt
// lies somewhere in [start of its started_at minute, end of its finished_at minute). The
// record also knows every process the scenario started, to the millisecond. The rule:
//
//  1. The processes that run nodes are FlowNet's run-network and poll-requests (argv holds
//     the command); other processes (archive-run, cancel-run, kSQL-Flow, …) run none.
//  2. All attempts with one invocation_id ran in one process: one run-network is one
//     invocation.
//  3. Invocations are taken in order: one holding attempt k of a node comes after one
//     holding attempt k-1 of it (their highest attempt_no), then by their first minute,
//     then as recorded.
//  4. Each invocation gets the first process, by start, that runs nodes, whose lifetime
//     overlaps the invocation's minute range, that no earlier invocation got and that did
//     not start before the previous invocation's process.
//
// The attempt is then drawn over its minute range cut to that process's lifetime, which is
// where it ran; without such a process, cut to the scenario's lifetime (its records belong to
// the scenario's scope, so they were written while it ran). Never longer than either.

// nodeRunners are the FlowNet commands that run nodes.
var nodeRunners = []string{"run-network", "poll-requests"}

func runsNodes(p record.Process) bool {
	return slices.ContainsFunc(p.Argv, func(a string) bool { return slices.Contains(nodeRunners, a) })
}

// processSpan is a process's lifetime: start to exit, or to the scenario's end when it was
// still running (no exit code, no duration).
func processSpan(p record.Process, scenEnd time.Time) (time.Time, time.Time) {
	to := p.Start.Add(time.Duration(p.DurationMS) * time.Millisecond)
	if p.ExitCode == nil && p.DurationMS == 0 {
		to = scenEnd
	}
	return p.Start, to
}

// minuteRange is the span an attempt with minute-precision times lies in; exact is false
// then. Times with seconds are exact: their own span.
func minuteRange(a record.Attempt) (from, to time.Time, exact bool) {
	from, to = a.StartedAt, a.FinishedAt
	if to.IsZero() || to.Before(from) {
		to = from.Add(time.Duration(a.DurationSec * float64(time.Second)))
	}
	if from.Truncate(time.Minute).Equal(from) && (a.FinishedAt.IsZero() || a.FinishedAt.Truncate(time.Minute).Equal(a.FinishedAt)) {
		last := a.FinishedAt
		if last.IsZero() {
			last = from
		}
		return from, last.Add(time.Minute), false
	}
	return from, to, true
}

// attemptProcesses maps each attempt (by index in s.Attempts) to the index in s.Processes
// of the process that ran it, by the rule above; -1 when none qualifies.
func attemptProcesses(s *record.Scenario) []int {
	out := make([]int, len(s.Attempts))
	for i := range out {
		out[i] = -1
	}
	type invocation struct {
		attempts []int
		from, to time.Time
		rank     int // highest attempt_no
		first    int // first index in the record
	}
	byID := map[string]*invocation{}
	var invs []*invocation
	for i, a := range s.Attempts {
		if a.StartedAt.IsZero() {
			continue
		}
		key := a.InvocationID
		if key == "" {
			key = fmt.Sprintf("\x00%d", i) // no id: an invocation of its own
		}
		inv := byID[key]
		from, to, _ := minuteRange(a)
		if inv == nil {
			inv = &invocation{from: from, to: to, first: i}
			byID[key] = inv
			invs = append(invs, inv)
		}
		inv.attempts = append(inv.attempts, i)
		inv.rank = max(inv.rank, a.AttemptNo)
		if from.Before(inv.from) {
			inv.from = from
		}
		if to.After(inv.to) {
			inv.to = to
		}
	}
	sort.SliceStable(invs, func(i, j int) bool {
		a, b := invs[i], invs[j]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		if !a.from.Equal(b.from) {
			return a.from.Before(b.from)
		}
		return a.first < b.first
	})
	var procs []int
	for i, p := range s.Processes {
		if !p.Start.IsZero() && runsNodes(p) {
			procs = append(procs, i)
		}
	}
	sort.SliceStable(procs, func(i, j int) bool { return s.Processes[procs[i]].Start.Before(s.Processes[procs[j]].Start) })
	used := map[int]bool{}
	var notBefore time.Time
	for _, inv := range invs {
		for _, pi := range procs {
			p := s.Processes[pi]
			pf, pt := processSpan(p, s.End)
			if used[pi] || p.Start.Before(notBefore) || !pf.Before(inv.to) || !pt.After(inv.from) {
				continue
			}
			used[pi], notBefore = true, p.Start
			for _, ai := range inv.attempts {
				out[ai] = pi
			}
			break
		}
	}
	return out
}

// Where a drawn attempt's times come from, finest first. kSQL-Flow's Execution Result keeps
// milliseconds; kintone's DATETIME keeps minutes (older records may hold seconds).
const (
	srcResult        = "kSQL-Flow result (ms)"
	srcKintoneExact  = "kintone (seconds)"
	srcKintoneMinute = "kintone (minute)"
)

// resultSpan is the attempt's span by its Execution Result, when that gives both ends.
func resultSpan(a record.Attempt) (from, to time.Time, ok bool) {
	r := a.Result
	if r == nil || r.StartedAt.IsZero() || r.FinishedAt.Before(r.StartedAt) {
		return time.Time{}, time.Time{}, false
	}
	return r.StartedAt, r.FinishedAt, true
}

// attemptWindow is where the timeline draws attempt a, and the source of those times: the
// attempt's Execution Result times where the record has them; else its kintone times with
// seconds as they are; else its minute range cut to the lifetime of the process that ran it
// (pi ≥ 0), or to the scenario's. When the cut is empty (the tenant's clock and ours
// disagree), the bound alone.
func attemptWindow(s *record.Scenario, a record.Attempt, pi int) (from, to time.Time, src string) {
	if from, to, ok := resultSpan(a); ok {
		return from, to, srcResult
	}
	from, to, exact := minuteRange(a)
	if exact {
		return from, to, srcKintoneExact
	}
	bf, bt := s.Start, s.End
	if pi >= 0 {
		bf, bt = processSpan(s.Processes[pi], s.End)
	}
	if from.Before(bf) {
		from = bf
	}
	if to.After(bt) {
		to = bt
	}
	if !from.Before(to) {
		return bf, bt, srcKintoneMinute
	}
	return from, to, srcKintoneMinute
}

// attemptTimesText says, under a timeline, where its node attempts' times come from: "node
// attempt times: 2 from kSQL-Flow result (ms), 1 from kintone (minute)"; "" without attempts.
func attemptTimesText(s *record.Scenario) string {
	count := map[string]int{}
	for _, a := range s.Attempts {
		if a.StartedAt.IsZero() {
			continue // not drawn
		}
		_, _, src := attemptWindow(s, a, -1)
		count[src]++
	}
	var parts []string
	for _, src := range []string{srcResult, srcKintoneExact, srcKintoneMinute} {
		if n := count[src]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d from %s", n, src))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	text := "Node attempt times: " + strings.Join(parts, ", ")
	if count[srcKintoneMinute] > 0 {
		text += "; a dashed bar is the minute span an attempt lies in, cut to the process that ran it (no finer time was recorded)"
	}
	return text
}
