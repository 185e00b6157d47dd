// Package merge combines the shard archives of one selection into one run (`archive merge`):
// which record of each scenario counts, and the run.json facts of the whole. It reads
// archives; the merged archive is written by package results like any other.
package merge

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results"
)

// MergeInput is one shard's archive as read by ReadArchive.
type MergeInput struct {
	Dir       string
	Run       *results.Run
	Scenarios []*results.Scenario
}

// Merged is the one run the shards make together: run.json fields (Scenarios, Totals,
// Evidence, ExitCode, State filled) and the chosen record of every scenario, in run order.
type Merged struct {
	Run       *results.Run
	Scenarios []*results.Scenario
}

// Merge combines shard archives of one selection into one run. It refuses archives that do
// not belong together (another target, profile, SUT commit or run order), a scenario that
// more than one shard ran, a scenario that no shard ran nor gave a reason for (a shard
// archive is missing), and totals that do not add up. A shard that was interrupted makes the
// merged run interrupted.
func Merge(in []MergeInput) (*Merged, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("merge needs at least two shard archives, got %d", len(in))
	}
	if err := checkShards(in); err != nil {
		return nil, err
	}
	first := in[0].Run
	chosen, interrupted, err := chooseRecords(in)
	if err != nil {
		return nil, err
	}
	out := &Merged{Run: mergedRun(in)}
	r := out.Run
	evidence := evidenceOfChosen(in, chosen)
	for _, id := range first.RunOrder {
		p := chosen[id]
		if p == nil {
			return nil, fmt.Errorf("scenario %s has no record in any shard: is a shard archive missing?", id)
		}
		if p.rec.Status == results.StatusNotRun && results.IsOtherShard(p.rec.Reason) {
			return nil, fmt.Errorf("scenario %s: every given shard left it to another shard (%s): a shard archive is missing", id, p.rec.Reason)
		}
		out.Scenarios = append(out.Scenarios, p.rec)
		r.Scenarios = append(r.Scenarios, p.sum)
		r.Evidence = append(r.Evidence, evidence[id]...)
	}
	if len(chosen) != len(first.RunOrder) {
		return nil, outsideRunOrder(chosen, first.RunOrder)
	}
	r.Totals = results.ComputeTotals(r.Scenarios)
	if err := checkTotals(r.Totals, r.Scenarios, len(first.RunOrder)); err != nil {
		return nil, err
	}
	r.State, r.ExitCode = outcome(r.Scenarios, interrupted)
	if r.End.IsZero() {
		r.End = time.Now().UTC()
	}
	return out, nil
}

// checkShards refuses archives that are not shards of one run: each has a run.json, and all
// share the target, profile, SUT commit, run order, product and tag expression.
func checkShards(in []MergeInput) error {
	first := in[0].Run
	for _, a := range in {
		if a.Run == nil {
			return fmt.Errorf("%s: no run.json (a run that never started is no shard)", a.Dir)
		}
		switch {
		case a.Run.Target != first.Target:
			return fmt.Errorf("%s ran on target %q, %s on %q: shards of one run share a target", a.Dir, a.Run.Target, in[0].Dir, first.Target)
		case a.Run.Profile != first.Profile:
			return fmt.Errorf("%s ran profile %q, %s profile %q", a.Dir, a.Run.Profile, in[0].Dir, first.Profile)
		case a.Run.SUT.Commit != first.SUT.Commit:
			return fmt.Errorf("%s tested SUT commit %q, %s commit %q: shards of one run test one commit", a.Dir, a.Run.SUT.Commit, in[0].Dir, first.SUT.Commit)
		case strings.Join(a.Run.RunOrder, ",") != strings.Join(first.RunOrder, ","):
			return fmt.Errorf("%s and %s have different run orders: not shards of one selection", a.Dir, in[0].Dir)
		case productKey(a.Run.Product) != productKey(first.Product):
			// A known product defect applies per product: shards of one run drove one product.
			return fmt.Errorf("%s drove %s, %s drove %s: shards of one run drive one product", a.Dir, a.Run.Product.Label(), in[0].Dir, first.Product.Label())
		case a.Run.TagExpression != first.TagExpression:
			return fmt.Errorf("%s selected %q, %s selected %q: not shards of one selection", a.Dir, a.Run.TagExpression, in[0].Dir, first.TagExpression)
		}
	}
	return nil
}

// pick is the record of a scenario the merge keeps, its run.json row and its shard.
type pick struct {
	rec  *results.Scenario
	sum  results.ScenarioSummary
	from int
}

// chooseRecords picks each scenario's record: the shard that ran it, else one that did not
// leave it to another shard. interrupted says a shard's run did not complete.
func chooseRecords(in []MergeInput) (chosen map[string]*pick, interrupted bool, err error) {
	chosen = map[string]*pick{}
	for i, a := range in {
		if a.Run.State != results.RunComplete {
			interrupted = true
		}
		sums := map[string]results.ScenarioSummary{}
		for _, s := range a.Run.Scenarios {
			sums[s.ID] = s
		}
		for _, rec := range a.Scenarios {
			sum, ok := sums[rec.ID]
			if !ok {
				return nil, false, fmt.Errorf("%s: scenario %s has a record but no row in run.json", a.Dir, rec.ID)
			}
			prev := chosen[rec.ID]
			ran := rec.Status != results.StatusNotRun
			switch {
			case prev == nil:
				chosen[rec.ID] = &pick{rec, sum, i}
			case ran && prev.rec.Status != results.StatusNotRun:
				return nil, false, fmt.Errorf("scenario %s ran in two shards (%s and %s): shards must not overlap", rec.ID, in[prev.from].Dir, a.Dir)
			case ran, results.IsOtherShard(prev.rec.Reason) && !results.IsOtherShard(rec.Reason):
				chosen[rec.ID] = &pick{rec, sum, i}
			}
		}
	}
	return chosen, interrupted, nil
}

// mergedRun is the first shard's run.json without what is a shard's own (label, rows,
// evidence, gate, exit code, command, budget), over the span of all the shards, with their
// API requests summed: each shard's counts are its own tenant's (or a share of one
// tenant's day), and a budget was checked per shard, so the merged run names none.
func mergedRun(in []MergeInput) *results.Run {
	first := in[0].Run
	r := &results.Run{}
	*r = *first
	r.Label, r.Scenarios, r.Evidence, r.Gate, r.ExitCode = "", nil, nil, nil, nil
	r.Command = nil
	r.APIRequests, r.APIBudget = nil, nil
	r.Start, r.End = first.Start, first.End
	for _, a := range in {
		r.APIRequests = r.APIRequests.Plus(a.Run.APIRequests)
		if a.Run.Start.Before(r.Start) {
			r.Start = a.Run.Start
		}
		if a.Run.End.After(r.End) {
			r.End = a.Run.End
		}
	}
	return r
}

// evidenceOfChosen are the evidence rows of each scenario, from the shard whose record of it
// the merge keeps.
func evidenceOfChosen(in []MergeInput, chosen map[string]*pick) map[string][]results.EvidenceRow {
	evidence := map[string][]results.EvidenceRow{}
	for _, a := range in {
		for _, e := range a.Run.Evidence {
			for _, id := range e.Scenarios {
				if p := chosen[id]; p != nil && in[p.from].Dir == a.Dir {
					evidence[id] = append(evidence[id], e)
					break
				}
			}
		}
	}
	return evidence
}

// outsideRunOrder names the scenarios with records that the run order does not list.
func outsideRunOrder(chosen map[string]*pick, runOrder []string) error {
	var extra []string
	order := map[string]bool{}
	for _, id := range runOrder {
		order[id] = true
	}
	for id := range chosen {
		if !order[id] {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	return fmt.Errorf("records of scenarios outside the run order: %s", strings.Join(extra, ", "))
}

// checkTotals checks the merged totals against the rows they count: n scenarios, every status
// counted once, no more known defects than failures nor stale ones than passes.
func checkTotals(t results.Totals, rows []results.ScenarioSummary, n int) error {
	var sum results.Totals
	for _, s := range rows {
		switch s.Status {
		case results.StatusPassed:
			sum.Passed++
		case results.StatusFailed:
			sum.Failed++
		case results.StatusBlocked:
			sum.Blocked++
		case results.StatusInterrupted:
			sum.Interrupted++
		case results.StatusNotRun:
			sum.NotRun++
			if s.NotSelected() {
				sum.NotSelected++
			}
		}
	}
	if t.KnownDefects > t.Failed || t.KnownDefectsNotReproduced > t.Passed {
		return fmt.Errorf("merged totals do not add up: %d known defects of %d failed, %d no longer reproducing of %d passed", t.KnownDefects, t.Failed, t.KnownDefectsNotReproduced, t.Passed)
	}
	if t.Total != n || t.Passed != sum.Passed || t.Failed != sum.Failed || t.Blocked != sum.Blocked || t.Interrupted != sum.Interrupted || t.NotRun != sum.NotRun || t.NotSelected != sum.NotSelected ||
		t.Passed+t.Failed+t.Blocked+t.Interrupted+t.NotRun != t.Total {
		return fmt.Errorf("merged totals do not add up: %+v over %d scenarios", t, n)
	}
	return nil
}

// outcome is the merged run's state and exit code: 1 for a failure no known defect excuses
// (or a known defect no longer reproducing), 3 when nothing ran, 130 when a shard was
// interrupted (runner.Execute's rules).
func outcome(rows []results.ScenarioSummary, interrupted bool) (string, *int) {
	code := 0
	ranAny := false
	for _, s := range rows {
		// A failure a known product defect excuses is no failure of the exit code; a known
		// defect that no longer reproduces is (runner.Execute's rule).
		if results.Unexcused(s.Status, s.KnownDefect) {
			code = 1
		}
		if s.Status != results.StatusNotRun {
			ranAny = true
		}
	}
	if code == 0 && !ranAny {
		code = 3
	}
	state := results.RunComplete
	if interrupted {
		state = results.RunInterrupted
		code = 130
	}
	return state, &code
}

// productKey is what decides which known product defects apply to a run: the product's kind,
// package and version.
func productKey(p *results.Product) string {
	if p == nil {
		return ""
	}
	return p.Kind + " " + p.Package + "@" + p.Version
}
