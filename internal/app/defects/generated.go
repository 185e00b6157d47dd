package defects

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/app/explorer"
	"github.com/ksqlflow/flowtest/internal/results"
)

// The fourth and fifth proofs of an explore catch: the scenario `flowtest explore` generated
// for the found schedule (schedules/<n>.feature, barriers forcing its order) is a scenario of
// the suite. Added to a copy of features/ the way its header says (explorer.AddToSuite) and
// run with `flowtest run --features <copy>`, it fails the declared way on the broken sandbox
// and passes on the correct one: a generated scenario that failed on both, or passed on the
// broken one, would prove nothing. An invariant-declared catch has no such proof: the
// invariants are the explorer's, not assertions of the scenario.

// generatedRows runs the generated scenario of v (found on the broken sandbox bin, in the
// exploration archive exploreDir) on the broken and the correct sandbox.
func (r *Run) generatedRows(d Defect, dir, bin, exploreDir string, v explorer.Violating) []Row {
	x := d.Explore
	if x.Invariant != "" {
		return nil
	}
	name := "generated " + v.Gherkin
	broken := Row{defect: d.Name, Scenario: name + " (broken sandbox)", Verdict: VerdictEscaped}
	correct := Row{defect: d.Name, Scenario: name + " (correct sandbox)", Verdict: VerdictEscaped}
	fail := func(why string) []Row {
		broken.Why, correct.Why = why, why
		return []Row{broken, correct}
	}
	if v.Gherkin == "" || v.Joins == nil {
		why := v.GherkinWhy
		if why == "" {
			why = "the exploration wrote no generated scenario of it"
		}
		return fail(fmt.Sprintf("schedule %d: %s", v.Schedule.N, why))
	}
	text, err := os.ReadFile(filepath.Join(exploreDir, filepath.FromSlash(v.Gherkin)))
	if err != nil {
		return fail(err.Error())
	}
	features := filepath.Join(dir, "generated", "features")
	if err := explorer.AddToSuite(filepath.Join(r.Root, "features"), features, *v.Joins, string(text)); err != nil {
		return fail("add it to a copy of the suite: " + err.Error())
	}
	id := v.Joins.ID
	run := func(sub, bin string) (*results.Scenario, error) {
		d := filepath.Join(dir, "generated", sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		recs, _, err := r.runScenariosIn(d, bin, features, []string{id})
		if err != nil {
			return nil, err
		}
		if recs[id] == nil {
			return nil, fmt.Errorf("no scenario record of %s was written (%s)", id, lastLinesOfFile(filepath.Join(d, "run.log"), 2))
		}
		return recs[id], nil
	}

	rec, err := run("broken", bin)
	if err != nil {
		broken.Why = err.Error()
	} else {
		broken.dur = time.Duration(rec.DurationMS) * time.Millisecond
		var why, failing string
		broken.Verdict, why, failing = judge(x.asCatch(), rec)
		broken.Why = why
		if why == "" {
			broken.failing = "@" + id + " fails as the exploration did: " + failing
		} else {
			broken.failing = failing
		}
	}

	cbin, err := r.correctSandbox()
	if err == nil {
		rec, err = run("correct", cbin)
	}
	switch {
	case err != nil:
		correct.Why = err.Error()
	case rec.Status != results.StatusPassed:
		correct.dur = time.Duration(rec.DurationMS) * time.Millisecond
		correct.Why = fmt.Sprintf("it fails on the correct sandbox too (%s), so it proves nothing", rec.Status)
		correct.failing = excerptOf(rec.Reason)
	default:
		correct.dur = time.Duration(rec.DurationMS) * time.Millisecond
		correct.Verdict = VerdictControlOK
		correct.failing = "@" + id + " passes on the correct sandbox: the forced order alone does not fail it"
	}
	return []Row{broken, correct}
}

// correctSandbox is the correct flowsandbox, built once for the whole invocation (the
// control, when it runs, uses the same binary).
func (r *Run) correctSandbox() (string, error) {
	r.correct.once.Do(func() {
		dir := filepath.Join(r.Work, "correct-sandbox")
		if r.correct.err = os.MkdirAll(dir, 0o755); r.correct.err != nil {
			return
		}
		r.correct.bin, r.correct.err = r.build(dir, "")
		if r.correct.err != nil {
			r.correct.err = fmt.Errorf("build the correct sandbox: %w", r.correct.err)
		}
	})
	return r.correct.bin, r.correct.err
}

// lazyBin is a binary built on first use.
type lazyBin struct {
	once sync.Once
	bin  string
	err  error
}
