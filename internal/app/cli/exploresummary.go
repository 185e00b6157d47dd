package cli

// The summary `flowtest explore` prints when its schedules are done: lines a reader can scan
// (one per outcome branch, not a Go map), or with --json one object of the same facts.

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/ksqlflow/flowtest/internal/app/explorer"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// exploreSummaryJSON is `flowtest explore --json`'s object (docs/explore.md): the facts of
// the text summary. The field names are a contract: add fields, never rename or drop one.
type exploreSummaryJSON struct {
	Scenario            string             `json:"scenario"`
	Strategy            string             `json:"strategy"`
	Seed                uint64             `json:"seed"`
	Schedules           int                `json:"schedules"`
	DistinctWriteOrders int                `json:"distinct_write_orders"`
	SeenBefore          int                `json:"seen_before"`
	Exhausted           bool               `json:"exhausted"`
	Passed              int                `json:"passed"`
	Violations          int                `json:"violations"`
	Branches            []branchCountJSON  `json:"branches"` // most schedules first
	ElapsedSeconds      float64            `json:"elapsed_seconds"`
	SchedulesPerMinute  float64            `json:"schedules_per_minute"`
	Archive             string             `json:"archive"`
	Via                 *explorer.Redirect `json:"via,omitempty"`
}

// branchCountJSON is one outcome branch (the `outcome branch` note of a step with
// alternatives; "" when the scenario noted none) and how many schedules ended in it.
type branchCountJSON struct {
	Branch    string `json:"branch"`
	Schedules int    `json:"schedules"`
}

func exploreSummary(rep *explorer.Report, archive string) exploreSummaryJSON {
	sum := exploreSummaryJSON{Scenario: rep.Scenario, Strategy: rep.Strategy, Seed: rep.Seed, Schedules: rep.SchedulesRun,
		DistinctWriteOrders: rep.DistinctOrder, SeenBefore: rep.Duplicates, Exhausted: rep.Exhausted, Passed: rep.Passed,
		Violations: len(rep.Violations), Branches: []branchCountJSON{}, ElapsedSeconds: rep.Elapsed,
		SchedulesPerMinute: rep.PerMinute, Archive: archive, Via: rep.Via}
	for b, n := range rep.Branches {
		sum.Branches = append(sum.Branches, branchCountJSON{Branch: b, Schedules: n})
	}
	slices.SortFunc(sum.Branches, func(a, b branchCountJSON) int {
		return cmp.Or(cmp.Compare(b.Schedules, a.Schedules), cmp.Compare(a.Branch, b.Branch))
	})
	return sum
}

// writeExploreSummary writes the summary as text to w, or, when jsonOut is set, as JSON to
// jsonOut through red (the text's w redacts on its own).
func writeExploreSummary(w, jsonOut io.Writer, red *redact.Redactor, sum exploreSummaryJSON) error {
	if jsonOut != nil {
		return writeJSON(jsonOut, sum, red)
	}
	fmt.Fprintf(w, "explore %s: %d schedules, %d distinct write orders (%d seen before), %d violations, %.0f s (%.1f/min) — %s\n",
		sum.Scenario, sum.Schedules, sum.DistinctWriteOrders, sum.SeenBefore, sum.Violations, sum.ElapsedSeconds, sum.SchedulesPerMinute, sum.Archive)
	if len(sum.Branches) == 0 {
		fmt.Fprintln(w, "  outcome branches: none (no schedule ran)")
		return nil
	}
	width := 0
	for _, b := range sum.Branches {
		width = max(width, len(branchName(b.Branch)))
	}
	fmt.Fprintln(w, "  outcome branches:")
	for _, b := range sum.Branches {
		fmt.Fprintf(w, "    %-*s  %d of %d schedules\n", width, branchName(b.Branch), b.Schedules, sum.Schedules)
	}
	return nil
}

// branchName is a branch as the text shows it: a scenario without alternatives notes none.
func branchName(b string) string {
	if b == "" {
		return "(no branch noted)"
	}
	return b
}
