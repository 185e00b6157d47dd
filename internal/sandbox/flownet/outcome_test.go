package flownet

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAggregateRules(t *testing.T) {
	cases := []struct {
		states  []string
		started bool
		want    string
	}{
		{[]string{"SUCCESS", "UNKNOWN", "RUNNING"}, true, "UNKNOWN"},
		{[]string{"SUCCESS", "RUNNING", "FAILED"}, true, "RUNNING"},
		{[]string{"SUCCESS", "FAILED", "BLOCKED"}, true, "FAILED"},
		{[]string{"SUCCESS", "BLOCKED"}, true, "FAILED"},
		{[]string{"SUCCESS", "CANCELLED", "WAITING"}, true, "CANCELLED"},
		{[]string{"SUCCESS", "SUCCESS"}, true, "SUCCESS"},
		{[]string{"WAITING", "SUCCESS"}, true, "RUNNING"},
		{[]string{"WAITING", "WAITING"}, false, "CREATED"},
		{nil, false, "CREATED"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Aggregate(c.states, c.started), "%v", c.states)
	}
}

func TestInvocationFinalCodes(t *testing.T) {
	for agg, want := range map[string][2]string{
		"SUCCESS":   {"SUCCESS", "OK"},
		"UNKNOWN":   {"UNKNOWN", "NODE_RESULT_UNKNOWN"},
		"FAILED":    {"FAILED", "NODE_FAILED_OR_BLOCKED"},
		"CANCELLED": {"CANCELLED", "NODE_CANCELLED"},
		"RUNNING":   {"CANCELLED", "NODES_DEFERRED"},
		"CREATED":   {"CANCELLED", "NODES_DEFERRED"},
	} {
		s, c := InvocationFinal(agg)
		assert.Equal(t, want, [2]string{s, c}, agg)
	}
}

func result(status, code string, exit int, started bool) []byte {
	m := map[string]any{
		"formatVersion": 1, "kind": "EXECUTION_RESULT", "contract": "ksql-flow.execution/v1",
		"correlationId": "netrun_1", "attemptId": "attempt_1", "executionId": "e1", "jobId": "job",
		"profile": "p", "status": status, "resultCode": code, "executionStarted": started,
		"exitCode": exit, "asOf": nil, "startedAt": nil, "finishedAt": "2026-08-30T00:00:00.000Z",
		"durationMs": 1500, "readCount": 3, "writtenCount": 0, "deletedCount": 0, "apiCalls": 2,
		"lastSuccessfulChunkNo": nil, "lastWrittenKey": nil, "ksqlFlowVersion": "x", "engineVersion": "y",
		"error": nil,
	}
	if status != "SUCCESS" {
		m["error"] = map[string]any{"category": "ASSERT", "code": code, "message": "boom", "retryable": false}
	}
	b, _ := json.Marshal(m)
	return b
}

// resultWith is a valid SUCCESS result with one field replaced (nil removes it).
func resultWith(field string, v any) []byte {
	var m map[string]any
	_ = json.Unmarshal(result("SUCCESS", "OK", 0, true), &m)
	if v == nil {
		delete(m, field)
	} else {
		m[field] = v
	}
	b, _ := json.Marshal(m)
	return b
}

func TestValidateResult(t *testing.T) {
	var r ExecutionResult
	require.NoError(t, ValidateResult(result("SUCCESS", "OK", 0, true), &r, "netrun_1", "attempt_1", "job", 0))
	require.NoError(t, ValidateResult(result("FAILED", "ASSERT_FAILED", 2, true), &r, "netrun_1", "attempt_1", "job", 2))
	require.NoError(t, ValidateResult(result("FAILED", "LOCK_CONFLICT", 5, false), &r, "netrun_1", "attempt_1", "job", 5))
	require.NoError(t, ValidateResult(resultWith("lastSuccessfulChunkNo", 4), &r, "netrun_1", "attempt_1", "job", 0))

	bad := []struct {
		name string
		raw  []byte
		exit int
		run  string
	}{
		{"exit mismatch", result("SUCCESS", "OK", 0, true), 1, "netrun_1"},
		{"id echo", result("SUCCESS", "OK", 0, true), 0, "netrun_2"},
		{"code/exit", result("FAILED", "ASSERT_FAILED", 1, true), 1, "netrun_1"},
		{"success not started", result("SUCCESS", "OK", 0, false), 0, "netrun_1"},
		{"lock conflict started", result("FAILED", "LOCK_CONFLICT", 5, true), 5, "netrun_1"},
		{"truncated", result("SUCCESS", "OK", 0, true)[:40], 0, "netrun_1"},
		{"negative deletedCount", resultWith("deletedCount", -1), 0, "netrun_1"},
		{"missing deletedCount", resultWith("deletedCount", nil), 0, "netrun_1"},
		{"fractional readCount", resultWith("readCount", 1.5), 0, "netrun_1"},
		{"negative chunk", resultWith("lastSuccessfulChunkNo", -1), 0, "netrun_1"},
		{"no executionId", resultWith("executionId", ""), 0, "netrun_1"},
		{"no engineVersion", resultWith("engineVersion", nil), 0, "netrun_1"},
	}
	for _, c := range bad {
		var r ExecutionResult
		assert.Error(t, ValidateResult(c.raw, &r, c.run, "attempt_1", "job", c.exit), c.name)
	}
}

func TestMapOutcome(t *testing.T) {
	ok := &ExecutionResult{Status: "SUCCESS", ResultCode: "OK"}
	assertFail := &ExecutionResult{Status: "FAILED", ResultCode: "ASSERT_FAILED"}
	conflict := &ExecutionResult{Status: "FAILED", ResultCode: "LOCK_CONFLICT"}
	cases := []struct {
		name string
		obs  Observation
		want Outcome
	}{
		{"success", Observation{ResultPresent: true, Result: ok, FlowNetStarted: true}, Outcome{"SUCCESS", "OK", "SUCCESS", "OK"}},
		{"assert", Observation{ResultPresent: true, Result: assertFail, FlowNetStarted: true}, Outcome{"FAILED", "ASSERT_FAILED", "FAILED", "ASSERT_FAILED"}},
		{"job lock held", Observation{ResultPresent: true, Result: conflict, FlowNetStarted: true}, Outcome{"CANCELLED", "PREPARE_FAILED", "WAITING", "PREPARE_FAILED"}},
		{"killed after start marker", Observation{FlowNetStarted: true, RunnerStarted: true}, Outcome{"UNKNOWN", "NO_EXECUTION_RESULT", "UNKNOWN", "NO_EXECUTION_RESULT"}},
		{"died before JOB marker", Observation{FlowNetStarted: true}, Outcome{"UNKNOWN", "NO_EXECUTION_RESULT", "UNKNOWN", "NO_EXECUTION_RESULT"}},
		{"launch failed", Observation{FlowNetStarted: true, LaunchFailed: true}, Outcome{"CANCELLED", "PREPARE_FAILED", "WAITING", "PREPARE_FAILED"}},
		{"invalid result", Observation{FlowNetStarted: true, ResultPresent: true, ResultInvalid: assert.AnError, RunnerStarted: true}, Outcome{"UNKNOWN", "INVALID_EXECUTION_RESULT", "UNKNOWN", "INVALID_EXECUTION_RESULT"}},
		{"forced kill", Observation{FlowNetStarted: true, ForcedKill: true, RunnerStarted: true}, Outcome{"UNKNOWN", "FORCED_TERMINATION", "UNKNOWN", "FORCED_TERMINATION"}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, MapOutcome(c.obs), c.name)
	}
}

func TestOrphanOutcome(t *testing.T) {
	assert.Equal(t, Outcome{"FAILED", "ASSERT_FAILED", "FAILED", "ASSERT_FAILED"}, OrphanOutcome("ABORTED", true))
	assert.Equal(t, Outcome{"SUCCESS", "NO_DATA", "SUCCESS", "NO_DATA"}, OrphanOutcome("NO_DATA", true))
	assert.Equal(t, Outcome{"FAILED", "EXECUTION_TIMEOUT", "FAILED", "EXECUTION_TIMEOUT"}, OrphanOutcome("TIMEOUT", true))
	assert.Equal(t, "UNKNOWN", OrphanOutcome("RUNNING", true).NodeStatus)
	assert.Equal(t, "NO_EXECUTION_RESULT", OrphanOutcome("", false).AttemptCode)
}

func TestRetryBrake(t *testing.T) {
	f := func(no int, status, code string) AttemptSummary { return AttemptSummary{no, status, code} }
	cases := []struct {
		name     string
		attempts []AttemptSummary
		code     string
		count    int
		fires    bool
	}{
		{"two failures", []AttemptSummary{f(1, "FAILED", "ASSERT_FAILED"), f(2, "FAILED", "ASSERT_FAILED")}, "ASSERT_FAILED", 2, false},
		{"three in a row", []AttemptSummary{f(3, "FAILED", "SQL_ERROR"), f(1, "FAILED", "SQL_ERROR"), f(2, "FAILED", "SQL_ERROR")}, "SQL_ERROR", 3, true},
		{"prepare failures are skipped", []AttemptSummary{f(1, "FAILED", "X"), f(2, "CANCELLED", "PREPARE_FAILED"), f(3, "FAILED", "X"), f(4, "CANCELLED", "PREPARE_FAILED"), f(5, "FAILED", "X")}, "X", 3, true},
		{"different code breaks the run", []AttemptSummary{f(1, "FAILED", "X"), f(2, "FAILED", "Y"), f(3, "FAILED", "Y")}, "Y", 2, false},
		{"an older different code stops the count", []AttemptSummary{f(1, "FAILED", "AUTH_ERROR"), f(2, "FAILED", "ASSERT_FAILED"), f(3, "FAILED", "ASSERT_FAILED"), f(4, "FAILED", "ASSERT_FAILED")}, "ASSERT_FAILED", 3, true},
		{"success breaks the run", []AttemptSummary{f(1, "FAILED", "X"), f(2, "FAILED", "X"), f(3, "SUCCESS", "OK"), f(4, "FAILED", "X")}, "X", 1, false},
		{"empty code breaks the run", []AttemptSummary{f(1, "FAILED", "X"), f(2, "FAILED", "X"), f(3, "FAILED", "")}, "", 0, false},
	}
	for _, c := range cases {
		code, count, fires := RetryBrake(c.attempts)
		assert.Equal(t, c.code, code, c.name)
		assert.Equal(t, c.count, count, c.name)
		assert.Equal(t, c.fires, fires, c.name)
	}
	assert.Equal(t, "RETRY_BRAKE:SQL_ERRORx3", RetryBrakeReason("SQL_ERROR", 3))
}

// A result file cut short (the child died while writing it) is "no result", not an invalid
// one: §1.3.3 maps incomplete JSON to UNKNOWN / NO_EXECUTION_RESULT once the JOB log shows
// the start marker; a complete document that breaks the contract stays INVALID_EXECUTION_RESULT.
func TestObserveIncompleteResultIsNoExecutionResult(t *testing.T) {
	full := result("SUCCESS", "OK", 0, true)
	cut := runResult{Exit: -1, ResultRaw: full[:40]}
	assert.Equal(t, Outcome{"UNKNOWN", "NO_EXECUTION_RESULT", "UNKNOWN", "NO_EXECUTION_RESULT"},
		MapOutcome(observe(cut, "netrun_1", "attempt_1", "job", true)))

	wrongEcho := runResult{Exit: 0, ResultRaw: full}
	assert.Equal(t, Outcome{"UNKNOWN", "INVALID_EXECUTION_RESULT", "UNKNOWN", "INVALID_EXECUTION_RESULT"},
		MapOutcome(observe(wrongEcho, "netrun_2", "attempt_1", "job", true)))

	ok := observe(runResult{Exit: 0, ResultRaw: full}, "netrun_1", "attempt_1", "job", true)
	require.NotNil(t, ok.Result)
	assert.Equal(t, Outcome{"SUCCESS", "OK", "SUCCESS", "OK"}, MapOutcome(ok))
}
