package defects

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

func manifestIDs(t *testing.T) map[string]bool {
	t.Helper()
	m, err := runner.LoadManifest(os.DirFS(filepath.Join("..", "..", "..", "features")), "manifest.yaml")
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, e := range m.Scenarios {
		ids[e.ID] = true
	}
	return ids
}

// The shipped catalogue is valid, every scenario of the manifest catches at least one defect
// (by its run or by its exploration), and the CI subset covers each of M5's and M6's too.
func TestCatalogueCoversEveryImplementedScenario(t *testing.T) {
	ids := manifestIDs(t)
	cat, err := LoadCatalogue(filepath.Join("..", "..", "..", CatalogueFile), ids)
	require.NoError(t, err)
	all, fast := map[string]bool{}, map[string]bool{}
	for _, d := range cat.Defects {
		for _, id := range d.scenarios() {
			all[id] = true
			if d.Fast {
				fast[id] = true
			}
		}
		if d.Explore != nil {
			all[d.Explore.Scenario] = true
		}
	}
	for id := range ids {
		assert.True(t, all[id], "no defect proves %s can fail: give it a catch (or, for a free race, an exploration)", id)
	}
	for _, id := range []string{"m5-serial-success", "m5-mid-failure", "m5-resume", "m5-lock-conflict", "m5-kill-unknown", "m6-01-resume-identity", "m6-02-unknown-isolation"} {
		assert.True(t, all[id], "no defect proves %s can fail", id)
		assert.True(t, fast[id], "no fast defect proves %s can fail in CI", id)
	}
}

func writeCatalogue(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "defects.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// refusalCase is a catalogue body and the words its refusal must contain.
type refusalCase struct{ body, want string }

// requireRefusals loads each case's catalogue (its body between head and tail) and requires a
// refusal containing its words.
func requireRefusals(t *testing.T, known map[string]bool, head, tail string, cases map[string]refusalCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadCatalogue(writeCatalogue(t, head+tc.body+tail), known)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCatalogueRefusals(t *testing.T) {
	known := map[string]bool{"m5-resume": true, "p2-01-05-claim-stale": true}
	cases := map[string]refusalCase{
		"bad name":       {"defects:\n- {name: Bad_Name, description: x, catches: [{scenario: m5-resume, assertion: a}]}\n", "lower-case"},
		"duplicate":      {"defects:\n- {name: a, description: x, awaiting: [m5-resume]}\n- {name: a, description: y, awaiting: [m5-resume]}\n", "duplicate name"},
		"no description": {"defects:\n- {name: a, catches: [{scenario: m5-resume, assertion: a}]}\n", "no description"},
		"nothing":        {"defects:\n- {name: a, description: x}\n", "neither"},
		"no assertion":   {"defects:\n- {name: a, description: x, catches: [{scenario: m5-resume}]}\n", "failing assertion"},
		"unknown":        {"defects:\n- {name: a, description: x, catches: [{scenario: m9-nope, assertion: a}]}\n", "not in the manifest"},
		"unknown await":  {"defects:\n- {name: a, description: x, awaiting: [m9-nope]}\n", "not in the manifest"},
		"typo field":     {"defects:\n- {name: a, description: x, awaitng: [m5-resume]}\n", "awaitng"},
		"empty":          {"defects: []\n", "no defects"},
	}
	requireRefusals(t, known, "", "", cases)
	cat, err := LoadCatalogue(writeCatalogue(t, "defects:\n- {name: resume-prints-new, description: x, fast: true, catches: [{scenario: m5-resume, assertion: a}]}\n"), known)
	require.NoError(t, err)
	assert.Equal(t, "defect_resume_prints_new", cat.Defects[0].tag())
}

func TestSelectDefects(t *testing.T) {
	all := []Defect{{Name: "a-b", Fast: true}, {Name: "c", Fast: false}, {Name: "d", Fast: true}}
	names := func(ds []Defect) (out []string) {
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return out
	}
	got, err := Select(all, nil, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"a-b", "c", "d"}, names(got))
	got, err = Select(all, nil, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"a-b", "d"}, names(got))
	got, err = Select(all, []string{"defect_a_b, c"}, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"a-b", "c"}, names(got))
	_, err = Select(all, []string{"c"}, true)
	assert.ErrorContains(t, err, "no defect selected")

	// --fast proves a defect by its catches and leaves its exploration to the full run.
	x := &ExploreCatch{Scenario: "s"}
	both := []Defect{{Name: "e", Fast: true, Catches: []Catch{{Scenario: "t"}}, Explore: x}}
	got, err = Select(both, nil, true)
	require.NoError(t, err)
	assert.Nil(t, got[0].Explore)
	assert.Same(t, x, got[0].exploreNotRun)
	assert.Same(t, x, both[0].Explore, "the catalogue's entry is untouched")
	got, err = Select(both, nil, false)
	require.NoError(t, err)
	assert.Same(t, x, got[0].Explore)
	assert.Nil(t, got[0].exploreNotRun)
	_, err = Select(all, []string{"zz"}, false)
	assert.ErrorContains(t, err, "no defect named zz")
}

// judge must call a defect caught only for the declared failure: these records are the ways
// a scenario can fail (or not) against a broken sandbox.
func TestJudge(t *testing.T) {
	c := Catch{Scenario: "m5-resume", Assertion: "attempt numbers of node n1_extract", Seen: "1,2"}
	failedOn := func(as ...results.Assertion) *results.Scenario {
		return &results.Scenario{ID: "m5-resume", Status: results.StatusFailed, Assertions: as,
			Steps: []results.Step{{Text: "Given x", Status: "passed"}, {Text: "Then y", Status: "failed", Error: "boom"}}}
	}
	ok := results.Assertion{What: "exit code of flownet-run-1", Expected: "1", Seen: "1", OK: true}
	right := results.Assertion{What: "attempt numbers of node n1_extract", Expected: "1", Seen: "1,2"}

	v, why, failing := judge(c, failedOn(ok, right))
	assert.Equal(t, VerdictCaught, v, why)
	assert.Equal(t, `attempt numbers of node n1_extract: expected 1, seen 1,2`, failing)

	// The right assertion, but not the first failure: something broke earlier.
	v, why, _ = judge(c, failedOn(results.Assertion{What: "exit code of flownet-run-2", Expected: "1", Seen: "2"}, right))
	assert.Equal(t, VerdictEscaped, v)
	assert.Contains(t, why, "another reason")

	// The right assertion failing for another reason (seen does not match).
	v, _, _ = judge(c, failedOn(results.Assertion{What: "attempt numbers of node n1_extract", Expected: "1", Seen: ""}))
	assert.Equal(t, VerdictEscaped, v)

	// A timeout or crash in a step, no assertion failed.
	v, why, failing = judge(c, failedOn())
	assert.Equal(t, VerdictEscaped, v)
	assert.Contains(t, why, "another reason")
	assert.Equal(t, "step Then y: boom", failing)

	// The step error may carry the declared text when no assertion was recorded.
	rec := failedOn()
	rec.Steps[1].Error = "attempt numbers of node n1_extract: expected 1, saw 1,2"
	v, _, _ = judge(c, rec)
	assert.Equal(t, VerdictCaught, v)

	// The declared assertion failed, but the SUT crashed on the way: not a catch.
	crashed := failedOn(ok, right)
	crashed.Processes = []results.Process{{Name: "flownet-run-2", StderrTail: "Error [SCHEDULER_FAILED]: boom\n"}}
	v, why, failing = judge(c, crashed)
	assert.Equal(t, VerdictEscaped, v)
	assert.Contains(t, why, `crashed: flownet-run-2: "Error [SCHEDULER_FAILED]: boom"`)
	assert.Equal(t, `attempt numbers of node n1_extract: expected 1, seen 1,2`, failing)
	crashed = failedOn()
	crashed.Steps[1].Error = "attempt numbers of node n1_extract: expected 1, saw 1,2"
	crashed.Processes = []results.Process{{Name: "flownet-run-2", Signal: "SIGABRT"}}
	v, why, _ = judge(c, crashed)
	assert.Equal(t, VerdictEscaped, v)
	assert.Contains(t, why, "crashed: flownet-run-2: ended by SIGABRT")

	v, why, _ = judge(c, &results.Scenario{Status: results.StatusPassed})
	assert.Equal(t, VerdictEscaped, v)
	assert.Equal(t, "the scenario passed", why)
	v, why, _ = judge(c, &results.Scenario{Status: results.StatusNotRun, Reason: "undefined step"})
	assert.Equal(t, VerdictEscaped, v)
	assert.Contains(t, why, "undefined step")
	v, why, _ = judge(c, nil)
	assert.Equal(t, VerdictEscaped, v)
	assert.Contains(t, why, "no scenario record")
	v, why, _ = judge(c, &results.Scenario{Status: results.StatusFailed, Steps: []results.Step{{Status: "passed"}}, Cleanup: results.Cleanup{Error: "delete failed"}})
	assert.Equal(t, VerdictEscaped, v)
	assert.Contains(t, why, "cleanup")
}

// A catch counts only when the SUT ran to its normal end: these are the ends the crash rule
// must tell apart.
func TestCrashOf(t *testing.T) {
	code := func(n int) *int { return &n }
	flownet := func(stderr string) results.Process {
		return results.Process{Name: "flownet-run-2", Argv: []string{"flowsandbox", "flownet", "run-network"}, ExitCode: code(1), StderrTail: stderr}
	}
	crashes := map[string]struct {
		p    results.Process
		want string
	}{
		"scheduler failed": {flownet("Error [SCHEDULER_FAILED]: create Attempt 1 of n2_fail\n"), `"Error [SCHEDULER_FAILED]`},
		"kintone refusal surfacing": {flownet("Error [REMOTE_ERROR]: create Attempt 1 of n2_fail: insert ATT:x: kintone: HTTP 400 [CB_VA01] duplicate\n"),
			"kintone error CB_VA01"},
		"uncoded error":          {flownet("Error [RUN_NETWORK_FAILED]: open bundle: EOF\n"), "RUN_NETWORK_FAILED"},
		"own records broken":     {flownet("Error [INVALID_STATE_TRANSITION]: node n1: SUCCESS -> RUNNING is not allowed\n"), "INVALID_STATE_TRANSITION"},
		"json scheduler failure": {results.Process{Name: "flownet-run-1", ExitCode: code(1), StdoutTail: `{"outcome":"NEW","invocation_result_code":"SCHEDULER_FAILED"}` + "\n"}, "invocation_result_code SCHEDULER_FAILED"},
		"go panic": {results.Process{Name: "flownet-run-1", ExitCode: code(2),
			StderrTail: "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n"}, "Go runtime failure \"panic: runtime error"},
		"dump end only": {results.Process{Name: "standalone-ksql-flow-1", ExitCode: code(2),
			StderrTail: "\t/src/x.go:12 +0x1d\n\ngoroutine 7 [select]:\nnet/http.(*persistConn).readLoop()\n"}, "goroutine 7 ["},
		"runtime fatal":       {results.Process{Name: "ksql-flow-1", ExitCode: code(2), StderrTail: "fatal error: concurrent map writes\n"}, "fatal error"},
		"own signal":          {results.Process{Name: "flownet-run-1", Signal: "SIGSEGV"}, "ended by SIGSEGV"},
		"kintone in ksqlflow": {results.Process{Name: "standalone-ksql-flow-1", ExitCode: code(3), StderrTail: "ksql-flow: final JOB log update of record 4: kintone: HTTP 409 [GAIA_CO02] conflict\n"}, "GAIA_CO02"},
	}
	for name, tc := range crashes {
		t.Run(name, func(t *testing.T) {
			ok := results.Process{Name: "standalone-ksql-flow-1", ExitCode: code(0)}
			got := crashOf(&results.Scenario{Processes: []results.Process{ok, tc.p}}, nil)
			assert.Contains(t, got, tc.p.Name+": ")
			assert.Contains(t, got, tc.want)
		})
	}
	normal := map[string]results.Process{
		"failed run":        flownet("NEW: Run netrun_1 finished with aggregate FAILED (NODE_FAILED_OR_BLOCKED).\n"),
		"rejection":         flownet("Error [RUN_ALREADY_EXISTS]: an unfinished Run netrun_1 exists\nBlocking run_id(s): netrun_1\n"),
		"lease lost":        flownet("Error [NETWORK_LEASE_INTERRUPTED]: heartbeat fenced\n"),
		"warning":           flownet("Warning [LOCK_UNAVAILABLE]: network lock release failed: timeout\n"),
		"deferred json":     {Name: "flownet-run-1", ExitCode: code(1), StdoutTail: `{"outcome":"NEW","invocation_result_code":"NODES_DEFERRED"}`},
		"harness kill":      {Name: "ksql-flow-1", Signal: "SIGKILL"},
		"harness stop":      {Name: "flownet-run-1", Signal: "SIGINT"},
		"harness terminate": {Name: "flownet-run-1", Signal: "SIGTERM"},
		"still running":     {Name: "flownet-run-1", Signal: "still running when recorded"},
		// The Error rule is FlowNet's: kSQL-Flow's own codes (exit 3 INTERNAL_ERROR is a
		// result it reports) are judged by the scenario.
		"ksql-flow result": {Name: "standalone-ksql-flow-1", ExitCode: code(3), StderrTail: "Error [INTERNAL_ERROR]: reported in the result\n"},
		"lock conflict":    {Name: "standalone-ksql-flow-1", ExitCode: code(5), StderrTail: "ksql-flow: statement 1/3\n"},
	}
	for name, p := range normal {
		assert.Empty(t, crashOf(&results.Scenario{Processes: []results.Process{p}}, nil), name)
	}
	assert.Empty(t, crashOf(&results.Scenario{}, nil))

	// A code the scenario's correct run prints on purpose (declared on the catch) is no crash;
	// any other code in the same output still is.
	injected := flownet("Error [REVISION_CONFLICT]: node state: kintone: HTTP 400 [GAIA_DA02] database lock\n")
	assert.Contains(t, crashOf(&results.Scenario{Processes: []results.Process{injected}}, nil), "GAIA_DA02")
	assert.Empty(t, crashOf(&results.Scenario{Processes: []results.Process{injected}}, []string{"GAIA_DA02"}))
	conflict := flownet("Error [AUDIT_CONFLICT]: OP:archive_1 differs\nkintone: HTTP 409 [GAIA_CO02]\n")
	assert.Contains(t, crashOf(&results.Scenario{Processes: []results.Process{conflict}}, []string{"AUDIT_CONFLICT"}), "GAIA_CO02")
	assert.Empty(t, crashOf(&results.Scenario{Processes: []results.Process{conflict}}, []string{"AUDIT_CONFLICT", "GAIA_CO02"}))
}

func TestExcerptKeepsTheDeclaredPart(t *testing.T) {
	long := strings.Repeat("x", 100) + "node FAILED/LOCK_CONFLICT" + strings.Repeat("y", 100)
	assert.Equal(t, "…xxxxnode FAILED/LOCK_CONFLICTyyyy…", assertionExcerpt(long, "node FAILED/LOCK_CONFLICT", 4))
	assert.Equal(t, long, assertionExcerpt(long, "", 4))
	assert.Equal(t, long, assertionExcerpt(long, "absent", 4))
	assert.Equal(t, "short", assertionExcerpt("short", "or", 4))
	assert.Equal(t, "…ééAéé…", assertionExcerpt("éééééAééééé", "A", 4), "never cuts inside a rune")
}

func TestVerdictOf(t *testing.T) {
	rows := []Row{
		{defect: "a", Verdict: VerdictCaught}, {defect: "a", Verdict: VerdictCaught},
		{defect: "b", Verdict: VerdictCaught}, {defect: "b", Verdict: VerdictEscaped},
		{defect: "c", Verdict: VerdictNotCovered}, {defect: "c", Verdict: VerdictCaught},
	}
	assert.Equal(t, VerdictCaught, VerdictOf("a", rows))
	assert.Equal(t, VerdictEscaped, VerdictOf("b", rows))
	assert.Equal(t, VerdictNotCovered, VerdictOf("c", rows))
	assert.Equal(t, VerdictEscaped, VerdictOf("missing", rows))
}

// The invariants `flowtest run` checks after the steps come after the scenario's own
// failures: a step that failed without an assertion is what counts, not an invariant
// violated later; with nothing failing before them, the invariant's assertion is the catch.
func TestJudgeInvariantsComeAfterTheSteps(t *testing.T) {
	inv := results.Assertion{What: "invariant puts-fenced", Expected: "no violation", Seen: "write 2 (poller A PUT request by-id [claimed_at,request_state]) carries no revision"}
	stepFailed := &results.Scenario{ID: "p2-01-01", Status: results.StatusFailed, Assertions: []results.Assertion{inv},
		Steps: []results.Step{{Text: "Then the request is DONE", Status: "failed", Error: "request state: timed out"}}}
	v, _, failing := judge(Catch{Assertion: "timed out"}, stepFailed)
	assert.Equal(t, VerdictCaught, v, "the failing step, not the invariant after it")
	assert.Equal(t, "step Then the request is DONE: request state: timed out", failing)
	v, _, _ = judge(Catch{Assertion: "invariant puts-fenced"}, stepFailed)
	assert.Equal(t, VerdictEscaped, v)

	onlyInv := &results.Scenario{ID: "p2-01-01", Status: results.StatusFailed, Assertions: []results.Assertion{{What: "exit code", OK: true}, inv},
		Steps: []results.Step{{Text: "Then the request is DONE", Status: "passed"}}}
	v, why, failing := judge(Catch{Assertion: "invariant puts-fenced", Seen: "poller A PUT request"}, onlyInv)
	assert.Equal(t, VerdictCaught, v, why)
	assert.Contains(t, failing, "invariant puts-fenced: expected no violation")
}
