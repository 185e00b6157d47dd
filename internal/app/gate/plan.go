package gate

import (
	"context"
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// Plan decides the gate's scope and builds its record: the required scenarios run; each
// carry-over series is carried over when its rule holds (every scenario of it has a passing
// record in the --since-archive archive, or carried over there with a record that still
// matches its sha256, made on the same target, and the SUT diff from the commit of those
// records to commit touches none of the rule's paths), and runs otherwise. It returns the
// record (statuses of what runs left empty) and the ids to run, in run order.
func Plan(ctx context.Context, g *Def, items []runner.Item, target, commit string, git Repo, since string) (*results.GateRecord, []string, error) {
	head, err := git.Resolve(ctx, commit)
	if err != nil {
		return nil, nil, refusal.New("--sut-commit %q: %v", commit, err)
	}
	rec := &results.GateRecord{
		SchemaVersion: results.SchemaVersion, Gate: g.Name, Title: g.Title, Definition: g.File,
		DefinitionSHA256: g.SHA256, Required: g.Required, SUT: results.GateSUT{Commit: head, Given: commit},
		CarryOver: []results.CarryOverRule{},
	}
	if h, err := git.Resolve(ctx, "HEAD"); err == nil && h != head {
		rec.SUT.Head = h
	}
	var ev *sinceEvidence
	if since != "" {
		ev, err = readSince(since)
		if err != nil {
			return nil, nil, refusal.New("--since-archive %q: %v", since, err)
		}
		rec.Since = &ev.since
	}
	required := map[string]bool{}
	for _, id := range g.RequiredIDs(items) {
		required[id] = true
	}
	rp := &rulePlanner{ctx: ctx, git: git, head: head, target: target, ev: ev,
		diffs: map[string]results.GateDiff{}, diffErr: map[string]error{}}
	carried := map[string]*results.CarriedOver{}
	for _, r := range g.Rules {
		ids := g.RuleScenarios(r, items)
		out, found := rp.judge(r, ids)
		if out.Holds {
			for i, id := range ids { // found[i] is the evidence of ids[i]
				carried[id] = found[i]
			}
		}
		rec.CarryOver = append(rec.CarryOver, out)
	}
	inRule := map[string]bool{}
	for _, r := range g.Rules {
		for _, id := range g.RuleScenarios(r, items) {
			inRule[id] = true
		}
	}
	var runIDs []string
	for _, it := range items {
		if !required[it.ID] && !inRule[it.ID] {
			continue
		}
		gs := results.GateScenario{ID: it.ID, Series: it.Series, Required: required[it.ID]}
		if co := carried[it.ID]; co != nil {
			gs.Status, gs.CarriedOver = results.StatusCarriedOver, co
			gs.Why = "carried over: last passed in " + co.Archive + " at commit " + shortCommit(co.Commit)
		} else {
			runIDs = append(runIDs, it.ID)
		}
		rec.Scenarios = append(rec.Scenarios, gs)
	}
	return rec, runIDs, nil
}

// rulePlanner judges the carry-over rules of one Plan against the --since-archive evidence
// (nil without one) and the SUT diffs to head, computed once per base commit.
type rulePlanner struct {
	ctx          context.Context
	git          Repo
	head, target string
	ev           *sinceEvidence
	diffs        map[string]results.GateDiff // by base commit
	diffErr      map[string]error
}

// judge decides whether rule r holds for its scenarios ids and returns its record and,
// when it holds, the evidence of each scenario (found[i] for ids[i]), filled in with the
// rule and its diff.
func (rp *rulePlanner) judge(r CarryRule, ids []string) (results.CarryOverRule, []*results.CarriedOver) {
	out := results.CarryOverRule{Series: r.Series, Paths: r.Paths, Justification: r.Justification, Scenarios: ids}
	found, holds, why := rp.evidence(ids)
	var baseOrder []string
	if holds {
		baseOrder, holds, why = baseCommits(found)
	}
	var touched []string
	if holds {
		touched, holds, why = rp.touched(r, baseOrder, &out)
	}
	if holds && len(touched) > 0 {
		holds = false
		shown := touched
		if len(shown) > 5 {
			shown = append(append([]string(nil), shown[:5]...), fmt.Sprintf("… (%d files)", len(touched)))
		}
		why = "the SUT diff touches " + strings.Join(shown, ", ")
	}
	if holds {
		why = fmt.Sprintf("none of %s changed between %s and %s; every scenario of %s has a passing record to point to", strings.Join(r.Paths, ", "), strings.Join(shortCommits(baseOrder), ", "), shortCommit(rp.head), r.Series)
		for _, co := range found {
			co.Series, co.Justification = r.Series, r.Justification
			for _, d := range out.Diffs {
				if d.Base == co.Commit {
					co.DiffCommand, co.DiffStat = d.Command, d.Stat
				}
			}
		}
	} else {
		found = nil
	}
	out.Holds, out.Why = holds, why
	return out, found
}

// evidence finds the earlier record of every scenario of a rule in the --since-archive
// archive, which must be of the same target; why says what is missing when it is not there.
func (rp *rulePlanner) evidence(ids []string) (found []*results.CarriedOver, holds bool, why string) {
	switch {
	case rp.ev == nil:
		return nil, false, "no --since-archive: there is no earlier passing record to carry over"
	case rp.ev.since.Target != rp.target:
		return nil, false, fmt.Sprintf("the --since-archive run was on target %q, this gate runs on %q: evidence does not carry across targets", rp.ev.since.Target, rp.target)
	}
	for _, id := range ids {
		co, problem := rp.ev.evidenceFor(id)
		if problem != "" {
			return found, false, id + ": " + problem
		}
		found = append(found, co)
	}
	return found, true, ""
}

// baseCommits lists, in first-seen order, the SUT commits the evidence was recorded at;
// every record must name one.
func baseCommits(found []*results.CarriedOver) (baseOrder []string, holds bool, why string) {
	bases := map[string]bool{}
	for _, co := range found {
		if co.Commit == "" {
			return baseOrder, false, fmt.Sprintf("the record of %s names no SUT commit (its run had no --sut-commit), so no diff can justify skipping it", co.Record)
		}
		if !bases[co.Commit] {
			bases[co.Commit] = true
			baseOrder = append(baseOrder, co.Commit)
		}
	}
	return baseOrder, true, ""
}

// touched diffs the SUT from each base commit to head, records each diff in out.Diffs
// with only the changed files under the rule's paths, and returns those files.
func (rp *rulePlanner) touched(r CarryRule, baseOrder []string, out *results.CarryOverRule) (touched []string, holds bool, why string) {
	for _, base := range baseOrder {
		d, ok := rp.diffs[base]
		if !ok && rp.diffErr[base] == nil {
			var err error
			d, err = rp.git.Diff(rp.ctx, base, rp.head)
			if err != nil {
				rp.diffErr[base] = err
			} else {
				rp.diffs[base] = d
			}
		}
		if e := rp.diffErr[base]; e != nil {
			return touched, false, fmt.Sprintf("cannot diff the SUT from %s: %v", base, e)
		}
		dd := d
		dd.Touched = nil
		for _, f := range d.Touched { // Touched holds every changed file here
			for _, p := range r.Paths {
				if pathCovered(p, f) {
					dd.Touched = append(dd.Touched, f)
					break
				}
			}
		}
		touched = append(touched, dd.Touched...)
		out.Diffs = append(out.Diffs, dd)
	}
	return touched, true, ""
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func shortCommits(cs []string) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = shortCommit(c)
	}
	return out
}
