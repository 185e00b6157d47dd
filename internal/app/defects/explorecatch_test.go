package defects

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/app/explorer"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
)

func TestExploreCatchRefusals(t *testing.T) {
	known := map[string]bool{"p2-11-03-duplicates": true}
	head := "defects:\n- name: a\n  description: x\n  explore: "
	cases := map[string]refusalCase{
		"no scenario":         {"{strategy: random, seed: 1, schedules: 5, assertion: a}", "names no scenario"},
		"unknown":             {"{scenario: m9-nope, strategy: random, seed: 1, schedules: 5, assertion: a}", "not in the manifest"},
		"no seed":             {"{scenario: p2-11-03-duplicates, strategy: random, schedules: 5, assertion: a}", "needs a seed"},
		"no budget":           {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, assertion: a}", "at least one schedule"},
		"neither":             {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedules: 5}", "either the failing assertion or the invariant"},
		"both":                {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedules: 5, assertion: a, invariant: puts-fenced}", "not both"},
		"seen alone":          {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedules: 5, invariant: puts-fenced, seen: x}", "there is no assertion"},
		"bad strategy":        {"{scenario: p2-11-03-duplicates, strategy: chaos, seed: 1, schedules: 5, assertion: a}", "unknown strategy"},
		"bad invariant":       {"{scenario: p2-11-03-duplicates, strategy: dfs, seed: 1, schedules: 5, invariant: one-lock}", "one-run-per-key"},
		"bad code":            {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedules: 5, assertion: a, expected_codes: [LOCK_CONFLICT]}", "nothing to exempt"},
		"typo in explore":     {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedule: 5, assertion: a}", "schedule"},
		"bad run":             {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedules: 5, assertion: a, run: sometimes}", `run: "sometimes" is neither missed nor either`},
		"either invariant":    {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedules: 5, invariant: one-run-per-key, run: either}", "run: either needs the failing assertion"},
		"run_invariant alone": {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedules: 5, assertion: a, run_invariant: puts-fenced}", "run_invariant is how a run of a free race (run: either) fails"},
		"bad run_invariant":   {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedules: 5, assertion: a, run: either, run_invariant: fenced}", `run_invariant "fenced" is not one of one-run-per-key`},
		"fast explore only":   {"{scenario: p2-11-03-duplicates, strategy: random, seed: 1, schedules: 5, assertion: a}\n  fast: true", "--fast does not run"},
	}
	requireRefusals(t, known, head, "\n", cases)
	cat, err := LoadCatalogue(writeCatalogue(t, head+"{scenario: p2-11-03-duplicates, strategy: pct, seed: 0, schedules: 5, invariant: one-run-per-key}\n"), known)
	require.NoError(t, err, "an explore catch alone is enough")
	x := cat.Defects[0].Explore
	assert.Equal(t, []string{"--schedules", "5", "--strategy", "pct", "--seed", "0", "--depth", "3", "--bound", "2"}, x.args(), "seed 0 is a seed; the command's defaults fill depth and bound")

	assert.NoError(t, CheckExplorable(cat.Defects, map[string]bool{"p2-11-03-duplicates": true}))
	err = CheckExplorable(cat.Defects, map[string]bool{"p2-11-03-duplicates": false})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not declared explorable")
}

func TestExploreCatchFindsTheFirstScheduleFailingTheDeclaredWay(t *testing.T) {
	seed := uint64(1)
	byAssertion := &ExploreCatch{Scenario: "s", Seed: &seed, Assertion: "outcomes of the two STARTs", Seen: "REJECTED/DUPLICATE_RECORD"}
	otherAssertion := explorer.ScheduleRun{N: 3, Assertion: "exit code of poller A", Reason: "failed: step x failed: exit code of poller A: expected 0, saw 1"}
	otherSeen := explorer.ScheduleRun{N: 5, Assertion: "outcomes of the two STARTs of one key", Reason: "failed: … saw first: DONE/OK; second: DONE/OK"}
	want := explorer.ScheduleRun{N: 9, Assertion: "outcomes of the two STARTs of one key", Reason: "failed: step y failed: outcomes of the two STARTs of one key: expected one DONE, saw first: REJECTED/DUPLICATE_RECORD; second: DONE/OK"}
	rep := &explorer.Report{Violations: []explorer.Violating{{Schedule: otherAssertion}, {Schedule: otherSeen}, {Schedule: want, Shrunk: true}}}
	v, ok := firstMatching(byAssertion, rep)
	require.True(t, ok)
	assert.Equal(t, 9, v.Schedule.N)
	assert.Equal(t, "outcomes of the two STARTs of one key: expected one DONE, saw first: REJECTED/DUPLICATE_RECORD; second: DONE/OK", failingOf(byAssertion, v.Schedule))

	byInvariant := &ExploreCatch{Scenario: "s", Seed: &seed, Invariant: "one-claim-per-request"}
	_, ok = firstMatching(byInvariant, rep)
	assert.False(t, ok, "no schedule broke the invariant")
	broke := explorer.ScheduleRun{N: 12, Passed: true, Violations: []schedule.Violation{{Invariant: "one-claim-per-request", Detail: "request 7: 2 claim PUTs succeeded"}}}
	rep.Violations = append(rep.Violations, explorer.Violating{Schedule: broke})
	v, ok = firstMatching(byInvariant, rep)
	require.True(t, ok)
	assert.Equal(t, 12, v.Schedule.N)
	assert.Equal(t, "one-claim-per-request: request 7: 2 claim PUTs succeeded", failingOf(byInvariant, v.Schedule))
	both := want
	both.Violations = broke.Violations
	assert.Equal(t, "outcomes of the two STARTs of one key: expected one DONE, saw first: REJECTED/DUPLICATE_RECORD; second: DONE/OK", failingOf(byAssertion, both), "a catch declared by its assertion shows the assertion, whatever invariants broke too")
}

// A race defect's verdict is its exploration's: the passing `flowtest run` is a proof, not
// the verdict, and a run that already fails it, or an exploration that does not find it,
// is an escape.
func TestRaceDefectVerdict(t *testing.T) {
	missed := Row{defect: "d", Verdict: VerdictMissed}
	found := Row{defect: "d", Verdict: VerdictCaught}
	assert.Equal(t, VerdictCaught, VerdictOf("d", []Row{missed, found, found}))
	assert.Equal(t, VerdictEscaped, VerdictOf("d", []Row{{defect: "d", Verdict: VerdictEscaped}, found, found}))
	assert.Equal(t, VerdictEscaped, VerdictOf("d", []Row{missed, {defect: "d", Verdict: VerdictEscaped}}))
	assert.Equal(t, VerdictEscaped, VerdictOf("d", []Row{missed}), "a passing run alone proves nothing")
	// The generated scenario passing on the correct sandbox is a proof too, never the verdict.
	passes := Row{defect: "d", Verdict: VerdictControlOK}
	assert.Equal(t, VerdictCaught, VerdictOf("d", []Row{missed, found, found, found, passes}))
	assert.Equal(t, VerdictEscaped, VerdictOf("d", []Row{missed, found, found, {defect: "d", Verdict: VerdictEscaped}, passes}), "the generated scenario did not fail on the broken sandbox")
	assert.Equal(t, VerdictEscaped, VerdictOf("d", []Row{missed, passes}))
	met := Row{defect: "d", Verdict: VerdictMetByRun}
	assert.Equal(t, VerdictCaught, VerdictOf("d", []Row{met, found, found, found, passes}), "run: either: a run that met it is a proof too")
	assert.Equal(t, VerdictEscaped, VerdictOf("d", []Row{met}), "a run that met it by chance alone is no exploration")
	notRun := Row{defect: "d", Verdict: VerdictNotRun}
	assert.Equal(t, VerdictCaught, VerdictOf("d", []Row{found, notRun}), "--fast: the catches give the verdict")
	assert.Equal(t, VerdictEscaped, VerdictOf("d", []Row{notRun}), "not run is never caught")
}
