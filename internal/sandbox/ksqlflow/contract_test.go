package ksqlflow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestCapabilitiesJSON(t *testing.T) {
	code, out, _ := invoke("capabilities", "--json")
	require.Equal(t, 0, code)
	require.True(t, strings.HasSuffix(out, "}\n") && strings.Count(out, "\n") == 1, "exactly one JSON object and LF")
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	assert.Equal(t, []string{"engineVersion", "executionContracts", "features", "formatVersion", "kind", "ksqlFlowVersion", "resultSchema"}, keysOf(m))
	assert.EqualValues(t, 1, m["formatVersion"])
	assert.Equal(t, "CAPABILITIES", m["kind"])
	assert.Equal(t, []any{"ksql-flow.execution/v1"}, m["executionContracts"])
	assert.Equal(t, "ksql-flow.execution/v1", m["resultSchema"].(map[string]any)["contract"])
	assert.NotEmpty(t, m["resultSchema"].(map[string]any)["$id"])
	assert.Equal(t, map[string]any{"resultJson": true, "correlationIds": true, "describeProfile": true, "inspectJob": true,
		"durableExecutionStarted": true, "gracefulCancel": true, "jobLockProtocol": "profile-job-v0", "importCsv": true, "resultCsv": true}, m["features"])

	code, _, _ = invoke("capabilities", "--bogus")
	assert.Equal(t, 1, code)
	code, _, _ = invoke("no-such-command")
	assert.Equal(t, 1, code)
}

func TestDescribeProfileHasNoTokens(t *testing.T) {
	e := startEmu(t, nil)
	code, out, errOut := invoke("describe-profile", "--profile", testProfile, "--config", e.cfgPath, "--json")
	require.Equal(t, 0, code, errOut)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	assert.Equal(t, []string{"apps", "baseUrl", "formatVersion", "guestSpaceId", "httpTimeoutMs", "kind", "limits", "logApp", "profile", "retry", "timezone"}, keysOf(m))
	assert.Equal(t, "PROFILE_DESCRIPTION", m["kind"])
	assert.Equal(t, e.srv.BaseURL(), m["baseUrl"], "normalized without trailing /")
	assert.Equal(t, "Asia/Tokyo", m["timezone"])
	assert.Nil(t, m["guestSpaceId"])
	// App ids are JSON integers, as the real kSQL-Flow prints them and the real FlowNet requires.
	// apps lists every app of the profile, the log app's entry included (as the real's).
	assert.Equal(t, map[string]any{"顧客管理": jsonNumber(t, e.apps["customers"].ID), "案件管理": jsonNumber(t, e.apps["deals"].ID),
		"KSQL_FLOW_JOB_LOG": jsonNumber(t, e.apps["log"].ID)}, m["apps"])
	assert.Equal(t, map[string]any{"name": "KSQL_FLOW_JOB_LOG", "appId": jsonNumber(t, e.apps["log"].ID)}, m["logApp"])
	assert.Equal(t, map[string]any{"batchTimeoutSec": 120.0, "maxApiCalls": nil, "maxReadRows": nil, "maxTempRows": nil}, m["limits"],
		"an unset limit is null (no limit), as the real prints it")
	assert.Equal(t, map[string]any{"maxAttempts": 1.0, "initialDelayMs": 0.0, "maxDelayMs": 0.0, "respectRetryAfter": true}, m["retry"])
	assert.Equal(t, 30000.0, m["httpTimeoutMs"], "the real's default")
	for _, tok := range e.env {
		assert.NotContains(t, out, tok)
	}
	assert.NotContains(t, out, "env:")

	code, _, _ = invoke("describe-profile", "--profile", "nope", "--config", e.cfgPath, "--json")
	assert.Equal(t, 1, code)
	code, _, _ = invoke("describe-profile", "--config", e.cfgPath, "--json")
	assert.Equal(t, 1, code, "explicit profile required")
}

// jsonNumber is a decimal id as encoding/json decodes a JSON integer into any.
func jsonNumber(t *testing.T, id string) float64 {
	t.Helper()
	n, err := strconv.ParseInt(id, 10, 64)
	require.NoError(t, err)
	return float64(n)
}

func TestInspectJob(t *testing.T) {
	e := startEmu(t, nil)
	code, out, errOut := invoke("inspect-job", "-f", fixturePath("job-longread.sql"), "--profile", testProfile, "--config", e.cfgPath, "--json")
	require.Equal(t, 0, code, errOut)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	assert.Equal(t, []string{"dependsOn", "diagnostics", "dialect", "fileName", "formatVersion", "jobId", "kind", "nondeterministicElements", "statementCount", "timeoutSec"}, keysOf(m))
	assert.Equal(t, "JOB_INSPECTION", m["kind"])
	assert.Equal(t, "m5_shared_read", m["jobId"])
	assert.Equal(t, "job-longread.sql", m["fileName"])
	assert.EqualValues(t, 14, m["statementCount"])
	assert.EqualValues(t, 600, m["timeoutSec"])
	assert.Equal(t, []any{}, m["diagnostics"])

	bad := filepath.Join(t.TempDir(), "bad.sql")
	require.NoError(t, os.WriteFile(bad, []byte("-- @ksql name: bad\nSELECT $id\n  FROM LAPP_顧客管理 GROUP BY 業種;\n"), 0o644))
	code, out, _ = invoke("inspect-job", "-f", bad, "--profile", testProfile, "--config", e.cfgPath, "--json")
	assert.Equal(t, 0, code, "diagnostics are reported in the document; the real inspect-job exits 0")
	var ji JobInspection
	require.NoError(t, json.Unmarshal([]byte(out), &ji))
	assert.Equal(t, "bad", ji.JobID)
	require.Len(t, ji.Diagnostics, 1)
	assert.Equal(t, Diagnostic{Code: diagUnsupported, Severity: "error", Line: 3, Column: 18, Message: ji.Diagnostics[0].Message}, ji.Diagnostics[0])
}

func TestRunFlagRules(t *testing.T) {
	e := startEmu(t, nil)
	file := fixturePath("success-n1-extract.sql")
	full, _ := e.orchestratorArgs(t, file, "m5_shared_read", "attempt_1")
	drop := func(args []string, flag string) []string {
		var out []string
		for i := 0; i < len(args); i++ {
			if args[i] == flag {
				i++
				continue
			}
			out = append(out, args[i])
		}
		return out
	}
	existing := filepath.Join(t.TempDir(), "exists.json")
	require.NoError(t, os.WriteFile(existing, []byte("{}"), 0o644))
	cases := map[string][]string{
		"no correlation id":    drop(full, "--correlation-id"),
		"no attempt id":        drop(full, "--attempt-id"),
		"no expected job id":   drop(full, "--expected-job-id"),
		"only ids, no result":  drop(full, "--result-json"),
		"ids without others":   {"run", "-f", file, "--profile", testProfile, "--config", e.cfgPath, "--attempt-id", "a"},
		"bad attempt id":       append(drop(full, "--attempt-id"), "--attempt-id", "attempt 1"),
		"attempt id too long":  append(drop(full, "--attempt-id"), "--attempt-id", strings.Repeat("a", 129)),
		"bad correlation id":   append(drop(full, "--correlation-id"), "--correlation-id", "run/1"),
		"result exists":        append(drop(full, "--result-json"), "--result-json", existing),
		"with dry-run":         append(full, "--dry-run"),
		"with json":            append(full, "--json"),
		"with sample":          append(full, "--sample", "10"),
		"with lock local-only": append(full, "--lock", "local-only"),
		"bad as-of":            append(drop(full, "--as-of"), "--as-of", "2026-08-15"),
		"no file":              drop(full, "-f"),
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := invoke(args...)
			assert.Equal(t, 1, code)
			assert.Empty(t, out)
			assert.NotEmpty(t, errOut)
		})
	}
	assert.Empty(t, e.logRecords(t), "a usage error never touches the JOB log")
	// The id pattern allows the characters FlowNet ids use.
	assert.True(t, idPattern.MatchString("attempt_0f8e:1.2-x"))
}

// checkResultShape validates the execution result against the contract's field list and
// the status / resultCode / exitCode consistency rules.
func checkResultShape(t *testing.T, m map[string]any, exit int) {
	t.Helper()
	required := []string{"formatVersion", "kind", "contract", "correlationId", "attemptId", "executionId", "jobId", "profile",
		"status", "resultCode", "executionStarted", "exitCode", "asOf", "startedAt", "finishedAt", "durationMs", "readCount",
		"writtenCount", "deletedCount", "apiCalls", "lastSuccessfulChunkNo", "lastWrittenKey", "ksqlFlowVersion", "engineVersion", "error"}
	for _, k := range required {
		assert.Contains(t, m, k)
	}
	assert.EqualValues(t, 1, m["formatVersion"])
	assert.Equal(t, "EXECUTION_RESULT", m["kind"])
	assert.Equal(t, "ksql-flow.execution/v1", m["contract"])
	assert.EqualValues(t, exit, m["exitCode"])
	for _, k := range []string{"durationMs", "readCount", "writtenCount", "deletedCount", "apiCalls"} {
		assert.GreaterOrEqual(t, m[k].(float64), 0.0, k)
	}
	code := m["resultCode"].(string)
	info, ok := resultCodes[code]
	require.True(t, ok, code)
	assert.Equal(t, info.status, m["status"])
	assert.Equal(t, info.exit, exit)
	if m["status"] == "SUCCESS" {
		assert.Nil(t, m["error"])
		assert.Equal(t, true, m["executionStarted"])
	} else {
		er := m["error"].(map[string]any)
		assert.Equal(t, []string{"category", "code", "detailsTruncated", "message", "retryable"}, keysOf(er))
		assert.NotEmpty(t, er["message"])
	}
	if code == "VALIDATION_ERROR" || code == "LOCK_CONFLICT" {
		assert.Equal(t, false, m["executionStarted"])
	}
	// Whatever the outcome, the real kSQL-Flow writes both receipt lists and a string jobId.
	for _, k := range []string{"input_files", "output_files"} {
		assert.IsType(t, []any{}, m[k], "%s is always an array", k)
	}
	assert.IsType(t, "", m["jobId"])
	_, err := time.Parse(time.RFC3339, m["finishedAt"].(string))
	assert.NoError(t, err)
}

func TestRunSuccessWritesResultAndJobLog(t *testing.T) {
	e := startEmu(t, nil)
	args, resPath := e.orchestratorArgs(t, fixturePath("success-n1-extract.sql"), "m5_shared_read", "attempt_ok")
	code, out, errOut := invoke(args...)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, out, "file mode keeps stdout free")
	r, m := readResult(t, resPath)
	checkResultShape(t, m, 0)
	assert.Equal(t, "OK", r.ResultCode)
	assert.Equal(t, "netrun_test-1", *r.CorrelationID)
	assert.Equal(t, "attempt_ok", *r.AttemptID)
	assert.Equal(t, "m5_shared_read", *r.JobID)
	assert.Equal(t, "2026-08-15T00:00:00.000Z", *r.AsOf)
	assert.Equal(t, 40, r.ReadCount, "40 seed customers")
	assert.GreaterOrEqual(t, r.APICalls, int64(4), "lock insert, marker, read, final update")

	recs := e.logRecords(t)
	require.Len(t, recs, 1)
	l := recs[0]
	assert.Equal(t, "SUCCESS", l.Str("status"))
	assert.Equal(t, "JOB", l.Str("record_type"))
	assert.Empty(t, l.Str("job_key"), "job key released")
	assert.Equal(t, "sandbox:m5_shared_read", l.Str("job_key_done"))
	assert.Equal(t, "netrun_test-1", l.Str("correlation_id"))
	assert.Equal(t, "attempt_ok", l.Str("attempt_id"))
	assert.Equal(t, r.ExecutionID, l.Str("execution_id"))
	assert.Equal(t, r.ExecutionID, l.Str("batch_id"))
	assert.Equal(t, "m5_shared_read", l.Str("job_id"))
	assert.Equal(t, "2026-08-15T00:00:00Z", l.Str("as_of"))
	assert.NotEmpty(t, l.Str("runner_execution_started_at"))
	assert.NotEmpty(t, l.Str("finished_at"))
	assert.Equal(t, "40", l.Str("read_count"))

	// FlowNet's own query finds exactly this row.
	found, err := e.admin.GetRecords(context.Background(), e.apps["log"].ID,
		`attempt_id = "attempt_ok" and execution_id = "`+r.ExecutionID+`" order by runner_execution_started_at desc limit 2`, nil)
	require.NoError(t, err)
	assert.Len(t, found, 1)

	// The local lock is gone after the run.
	wd, _ := os.Getwd()
	assert.NoFileExists(t, localLockPath(wd, testProfile))
}

func TestRunFailures(t *testing.T) {
	e := startEmu(t, nil)
	t.Run("assert failed", func(t *testing.T) {
		args, resPath := e.orchestratorArgs(t, fixturePath("assert-fail.sql"), "m5_midfail_assert", "attempt_assert")
		code, _, _ := invoke(args...)
		require.Equal(t, 2, code)
		r, m := readResult(t, resPath)
		checkResultShape(t, m, 2)
		assert.Equal(t, "ASSERT_FAILED", r.ResultCode)
		assert.Equal(t, "ASSERT", r.Error.Category)
		assert.True(t, r.ExecutionStarted)
		assert.Zero(t, r.ReadCount, "the COUNT after the ASSERT never ran")
		assert.Equal(t, "ABORTED", findLog(t, e, "attempt_assert").Str("status"))
	})
	t.Run("invalid business token", func(t *testing.T) {
		t.Setenv(envCustomers, "not-a-token-0000000000000000000000000000")
		args, resPath := e.orchestratorArgs(t, fixturePath("success-n1-extract.sql"), "m5_shared_read", "attempt_auth")
		code, _, _ := invoke(args...)
		require.Equal(t, 3, code)
		r, m := readResult(t, resPath)
		checkResultShape(t, m, 3)
		assert.Equal(t, "AUTH_ERROR", r.ResultCode)
		assert.True(t, r.ExecutionStarted)
		l := findLog(t, e, "attempt_auth")
		assert.Equal(t, "FAILED", l.Str("status"))
		assert.Empty(t, l.Str("job_key"))
	})
	t.Run("parse error", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.sql")
		require.NoError(t, os.WriteFile(bad, []byte("-- @ksql name: bad_job\nSELECT COUNT(*)\nFROM LAPP_顧客管理 WHERE 業種 LIKE 'x';\n"), 0o644))
		args, resPath := e.orchestratorArgs(t, bad, "bad_job", "attempt_parse")
		code, _, _ := invoke(args...)
		require.Equal(t, 1, code)
		r, m := readResult(t, resPath)
		checkResultShape(t, m, 1)
		assert.Equal(t, "VALIDATION_ERROR", r.ResultCode)
		assert.Contains(t, r.Error.Message, "line 3, column 25")
		assert.Nil(t, r.StartedAt)
		assert.Empty(t, findLogs(t, e, "attempt_parse"), "nothing is locked or logged for an invalid job")
	})
	t.Run("job id mismatch", func(t *testing.T) {
		args, resPath := e.orchestratorArgs(t, fixturePath("success-n1-extract.sql"), "other_job", "attempt_mismatch")
		code, _, _ := invoke(args...)
		require.Equal(t, 1, code)
		r, m := readResult(t, resPath)
		checkResultShape(t, m, 1)
		assert.Equal(t, "VALIDATION_ERROR", r.ResultCode)
		assert.False(t, r.ExecutionStarted)
		assert.Equal(t, "other_job", *r.JobID, "the result names the expected job, as the real synthetic outcome does")
	})
	t.Run("unknown logical app", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "app.sql")
		require.NoError(t, os.WriteFile(bad, []byte("-- @ksql name: app_job\nSELECT COUNT(*) FROM LAPP_売上;\n"), 0o644))
		args, resPath := e.orchestratorArgs(t, bad, "app_job", "attempt_app")
		code, _, _ := invoke(args...)
		require.Equal(t, 1, code)
		r, _ := readResult(t, resPath)
		assert.Equal(t, "VALIDATION_ERROR", r.ResultCode)
		assert.Contains(t, r.Error.Message, "LAPP_売上")
	})
	t.Run("relative sql path in orchestrator mode", func(t *testing.T) {
		args, resPath := e.orchestratorArgs(t, "success-n1-extract.sql", "m5_shared_read", "attempt_rel")
		code, _, _ := invoke(args...)
		require.Equal(t, 1, code)
		r, _ := readResult(t, resPath)
		assert.Equal(t, "VALIDATION_ERROR", r.ResultCode)
	})
}

func findLogs(t *testing.T, e *emu, attempt string) []kintoneapi.Record {
	t.Helper()
	recs, err := e.admin.GetRecords(context.Background(), e.apps["log"].ID, `attempt_id = "`+attempt+`"`, nil)
	require.NoError(t, err)
	return recs
}

func findLog(t *testing.T, e *emu, attempt string) kintoneapi.Record {
	t.Helper()
	recs := findLogs(t, e, attempt)
	require.Len(t, recs, 1, "JOB log rows of %s", attempt)
	return recs[0]
}

// holdJobKey inserts a RUNNING JOB log record holding key, as a killed holder leaves it.
func holdJobKey(t *testing.T, e *emu, key string) string {
	t.Helper()
	id, _, err := e.admin.AddRecord(context.Background(), e.apps["log"].ID, kintoneapi.Values(map[string]any{
		"record_type": "JOB", "status": "RUNNING", "job_key": key, "batch_id": "holder-batch", "execution_id": "holder-batch",
		"host": "holder-host", "script_name": "job-longread.sql", "runner_execution_started_at": "2026-08-15T00:00:00Z",
	}))
	require.NoError(t, err)
	return id
}

func TestLockConflictInspectAndForceUnlock(t *testing.T) {
	e := startEmu(t, nil)
	holder := holdJobKey(t, e, "sandbox:m5_shared_read")

	args, resPath := e.orchestratorArgs(t, fixturePath("diamond-customers.sql"), "m5_shared_read", "attempt_conflict")
	code, _, _ := invoke(args...)
	require.Equal(t, 5, code)
	r, m := readResult(t, resPath)
	checkResultShape(t, m, 5)
	assert.Equal(t, "LOCK_CONFLICT", r.ResultCode)
	assert.False(t, r.ExecutionStarted)
	assert.Zero(t, r.ReadCount)
	assert.Empty(t, findLogs(t, e, "attempt_conflict"), "no JOB log row for a conflict")

	lockArgs := []string{"--job-key", "sandbox:m5_shared_read", "--profile", testProfile, "--config", e.cfgPath, "--json"}
	code, out, errOut := invoke(append([]string{"inspect-lock"}, lockArgs...)...)
	require.Equal(t, 0, code, errOut)
	var li map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &li))
	assert.Equal(t, []string{"formatVersion", "inspectedAt", "jobKey", "kind", "locked", "record"}, keysOf(li))
	assert.Equal(t, "LOCK_INSPECTION_RESULT", li["kind"])
	assert.Equal(t, true, li["locked"])
	assert.Equal(t, map[string]any{"recordId": holder, "batchId": "holder-batch", "startedAt": "2026-08-15T00:00:00Z",
		"host": "holder-host", "scriptName": "job-longread.sql"}, li["record"])

	unlock := func(extra ...string) (int, LockRecovery, map[string]any) {
		code, out, errOut := invoke(append(append([]string{"force-unlock-job"}, lockArgs...), extra...)...)
		var doc LockRecovery
		var raw map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &doc), errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &raw))
		return code, doc, raw
	}
	// Without the confirmations nothing is written.
	code, doc, _ := unlock("--reason", "cleanup", "--evidence-ref", "file:///tmp/evidence.json")
	assert.Equal(t, 3, code)
	assert.Equal(t, "UNCONFIRMED", doc.Outcome)
	assert.Equal(t, "RUNNING", mustGet(t, e, holder).Str("status"))
	// A relative evidence reference is bad input.
	code, _, _ = invoke(append(append([]string{"force-unlock-job"}, lockArgs...), "--reason", "x", "--confirmed-by", "op", "--evidence-ref", "evidence.json")...)
	assert.Equal(t, 1, code)

	code, doc, raw := unlock("--reason", "M5 kill cleanup", "--confirmed-by", "operator-1", "--evidence-ref", "file:///tmp/evidence.json")
	require.Equal(t, 0, code)
	assert.Equal(t, []string{"before", "executedAt", "formatVersion", "jobKey", "kind", "outcome", "recordId"}, keysOf(raw))
	assert.Equal(t, "LOCK_RECOVERY_RESULT", doc.Kind)
	assert.Equal(t, "RELEASED", doc.Outcome)
	assert.Equal(t, holder, *doc.RecordID)
	assert.Equal(t, "holder-batch", doc.Before.BatchID)
	rec := mustGet(t, e, holder)
	assert.Equal(t, "FAILED", rec.Str("status"))
	assert.Empty(t, rec.Str("job_key"))
	assert.Equal(t, "sandbox:m5_shared_read", rec.Str("job_key_done"))
	assert.True(t, strings.HasPrefix(rec.Str("log_detail"), "LOCK_RECOVERY "))
	assert.Contains(t, rec.Str("log_detail"), "operator-1")
	assert.NotEmpty(t, rec.Str("finished_at"))

	code, out, _ = invoke(append([]string{"inspect-lock"}, lockArgs...)...)
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &li))
	assert.Equal(t, false, li["locked"])
	assert.Nil(t, li["record"])

	code, doc, _ = unlock("--reason", "again", "--confirmed-by", "operator-1", "--evidence-ref", "https://example.invalid/e/1")
	assert.Equal(t, 0, code)
	assert.Equal(t, "NOT_FOUND", doc.Outcome)
	assert.Nil(t, doc.RecordID)

	// With the key free the job runs.
	args, _ = e.orchestratorArgs(t, fixturePath("diamond-customers.sql"), "m5_shared_read", "attempt_after")
	code, _, errOut = invoke(args...)
	assert.Equal(t, 0, code, errOut)
}

func mustGet(t *testing.T, e *emu, id string) kintoneapi.Record {
	t.Helper()
	r, err := e.admin.GetRecord(context.Background(), e.apps["log"].ID, id)
	require.NoError(t, err)
	return r
}

func TestForceUnlockConflictAndNotRunning(t *testing.T) {
	e := startEmu(t, nil)
	id := holdJobKey(t, e, "sandbox:stuck_job")
	_, err := e.admin.UpdateRecord(context.Background(), e.apps["log"].ID, id, kintoneapi.Values(map[string]any{"status": "FAILED"}), "")
	require.NoError(t, err)
	code, out, _ := invoke("force-unlock-job", "--job-key", "sandbox:stuck_job", "--reason", "r", "--confirmed-by", "op",
		"--evidence-ref", "file:///e", "--profile", testProfile, "--config", e.cfgPath, "--json")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"outcome":"NOT_RUNNING"`)

	// Revision fencing: a write between the read and the release is a CONFLICT.
	id2 := holdJobKey(t, e, "sandbox:busy_job")
	jl := &jobLog{app: e.apps["log"].ID}
	p, err := LoadConfig(e.cfgPath, testProfile)
	require.NoError(t, err)
	jl.c, err = newConn(p, nil, true)
	require.NoError(t, err)
	racer := &racingTransport{base: jl.c.kc.HTTP.Transport, before: func() {
		_, err := e.admin.UpdateRecord(context.Background(), e.apps["log"].ID, id2, kintoneapi.Values(map[string]any{"log_detail": "progress"}), "")
		require.NoError(t, err)
	}}
	jl.c.kc.HTTP.Transport = racer
	outcome, rid, _, next := jl.forceUnlock(context.Background(), unlockRequest{key: "sandbox:busy_job", reason: "r", confirmedBy: "op", evidenceRef: "file:///e", now: time.Now(), eventID: "job_unlock_x"})
	assert.Equal(t, "CONFLICT", outcome)
	assert.Equal(t, id2, *rid)
	assert.NotEmpty(t, next)
	assert.Equal(t, "sandbox:busy_job", mustGet(t, e, id2).Str("job_key"), "a conflicting release changes nothing")
	assert.Equal(t, 5, outcomeExit[outcome])
}

// racingTransport runs before() once, just before the first PUT goes out.
type racingTransport struct {
	base   http.RoundTripper
	before func()
	once   sync.Once
}

func (r *racingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut {
		r.once.Do(r.before)
	}
	return r.base.RoundTrip(req)
}

// TestStartMarkerBeforeFirstStatement puts a proxy between kSQL-Flow and the emulator; when
// the first business-app read arrives, the proxy reads the JOB log directly: the durable
// start marker must already be there.
func TestStartMarkerBeforeFirstStatement(t *testing.T) {
	e := startEmu(t, nil)
	target, err := url.Parse(e.srv.BaseURL())
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = e.admin.HTTP.Transport
	var once sync.Once
	var seen []kintoneapi.Record
	var seenErr error
	customersApp := e.apps["customers"].ID
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/k/v1/records.json" && r.URL.Query().Get("app") == customersApp {
			once.Do(func() {
				seen, seenErr = e.admin.GetRecords(r.Context(), e.apps["log"].ID, `attempt_id = "attempt_marker"`, nil)
			})
		}
		r.Host = target.Host
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	e.cfgPath = e.writeConfig(t, proxy.URL)

	args, resPath := e.orchestratorArgs(t, fixturePath("success-n1-extract.sql"), "m5_shared_read", "attempt_marker")
	code, _, errOut := invoke(args...)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, seenErr)
	require.Len(t, seen, 1, "the JOB log row exists when the first statement reads")
	assert.Equal(t, "RUNNING", seen[0].Str("status"))
	assert.Equal(t, "sandbox:m5_shared_read", seen[0].Str("job_key"))
	assert.NotEmpty(t, seen[0].Str("runner_execution_started_at"), "durable start marker written before the first statement")
	r, _ := readResult(t, resPath)
	assert.True(t, r.ExecutionStarted)
}

func TestLocalLock(t *testing.T) {
	e := startEmu(t, nil)
	wd, err := os.Getwd()
	require.NoError(t, err)
	host, _ := os.Hostname()
	path := localLockPath(wd, testProfile)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	write := func(l localLock) {
		b, _ := json.Marshal(l)
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
	// A live process of this host holds it: LOCK_CONFLICT before the JOB log is touched.
	write(localLock{PID: os.Getpid(), Host: host, Profile: testProfile, StartedAt: time.Now().UTC().Format(time.RFC3339Nano), BatchID: "b1"})
	args, resPath := e.orchestratorArgs(t, fixturePath("drill-join.sql"), "m6_drill_join", "attempt_local")
	code, _, _ := invoke(args...)
	require.Equal(t, 5, code)
	r, _ := readResult(t, resPath)
	assert.Equal(t, "LOCK_CONFLICT", r.ResultCode)
	assert.Equal(t, "LOCAL_LOCK_HELD", r.Error.Code)
	assert.Empty(t, e.logRecords(t))
	assert.FileExists(t, path, "someone else's lock is left alone")

	// A dead holder on this host is stale: replaced, and the run proceeds.
	write(localLock{PID: 0x7ffffff0, Host: host, Profile: testProfile, StartedAt: time.Now().UTC().Format(time.RFC3339Nano), BatchID: "b2"})
	args, _ = e.orchestratorArgs(t, fixturePath("drill-join.sql"), "m6_drill_join", "attempt_local2")
	code, _, errOut := invoke(args...)
	require.Equal(t, 0, code, errOut)
	assert.NoFileExists(t, path)

	// Standalone --lock local-only takes only the local lock (no JOB log row).
	code, out, errOut := invoke("run", "-f", fixturePath("drill-join.sql"), "--profile", testProfile, "--config", e.cfgPath, "--lock", "local-only", "--json")
	require.Equal(t, 0, code, errOut)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	checkResultShape(t, m, 0)
	assert.Nil(t, m["correlationId"])
	assert.Nil(t, m["asOf"])
	assert.Len(t, e.logRecords(t), 1, "only the earlier orchestrator run wrote a row")
}

func TestExecutionTimeout(t *testing.T) {
	e := startEmu(t, map[string]time.Duration{"customers": 300 * time.Millisecond})
	job := filepath.Join(t.TempDir(), "slow.sql")
	require.NoError(t, os.WriteFile(job, []byte("-- @ksql name: slow_job\n-- @ksql timeout: 1\n"+
		strings.Repeat("SELECT COUNT(*) FROM LAPP_顧客管理;\n", 10)), 0o644))
	args, resPath := e.orchestratorArgs(t, job, "slow_job", "attempt_timeout")
	code, _, _ := invoke(args...)
	require.Equal(t, 3, code)
	r, m := readResult(t, resPath)
	checkResultShape(t, m, 3)
	assert.Equal(t, "EXECUTION_TIMEOUT", r.ResultCode)
	l := findLog(t, e, "attempt_timeout")
	assert.Equal(t, "TIMEOUT", l.Str("status"))
	assert.Empty(t, l.Str("job_key"))
}

func TestStandaloneStdoutResult(t *testing.T) {
	e := startEmu(t, nil)
	code, out, errOut := invoke("run", "-f", fixturePath("diamond-join.sql"), "--profile", testProfile, "--config", e.cfgPath, "--result-json", "-")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 1, strings.Count(out, "\n"))
	var r ExecutionResult
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Equal(t, 40+160, r.ReadCount)
	assert.Nil(t, r.AttemptID)
	recs := e.logRecords(t)
	require.Len(t, recs, 1, "standalone runs take the JOB log lock too")
	assert.Empty(t, recs[0].Str("correlation_id"))
	assert.Equal(t, "SUCCESS", recs[0].Str("status"))
}

func TestJobKeyRules(t *testing.T) {
	_, err := jobKey("p", strings.Repeat("j", 62))
	assert.NoError(t, err, "64 units exactly")
	_, err = jobKey("p", strings.Repeat("j", 63))
	assert.Error(t, err)
	_, err = jobKey("p", "a:b")
	assert.Error(t, err)
	_, err = jobKey("p", "__batch__")
	assert.Error(t, err)
	// UTF-16 units, not bytes: 30 kanji + "p:" = 32 units.
	_, err = jobKey("p", strings.Repeat("顧", 30))
	assert.NoError(t, err)
	_, err = jobKey("p", strings.Repeat("😀", 32)) // surrogate pairs: 64 units + 2
	assert.Error(t, err)
}

func TestValidate(t *testing.T) {
	e := startEmu(t, nil)
	code, out, errOut := invoke("validate", "-f", fixturePath("m6-longread.sql"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "OK: m6-longread.sql (21 statements)")

	bad := filepath.Join(t.TempDir(), "bad.sql")
	require.NoError(t, os.WriteFile(bad, []byte("-- @ksql name: bad\nDELETE FROM LAPP_顧客管理;\n"), 0o644))
	code, _, errOut = invoke("validate", "-f", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "bad.sql:2:1: KSQL1002")

	code, out, errOut = invoke("validate", "--check-logapp", "--profile", testProfile, "--config", e.cfgPath)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "OK: JOB log app "+e.apps["log"].ID)

	t.Setenv(envLog, "wrong-token-00000000000000000000000000000")
	code, _, errOut = invoke("validate", "--check-logapp", "--profile", testProfile, "--config", e.cfgPath)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "JOB log")

	// inspect-lock with an unusable log app reports LOCK_QUERY_UNAVAILABLE, exit 3.
	code, out, _ = invoke("inspect-lock", "--job-key", "sandbox:x", "--profile", testProfile, "--config", e.cfgPath, "--json")
	assert.Equal(t, 3, code)
	var li LockInspection
	require.NoError(t, json.Unmarshal([]byte(out), &li))
	assert.Nil(t, li.Locked)
	require.NotNil(t, li.Error)
	assert.Equal(t, "LOCK_QUERY_UNAVAILABLE", li.Error.Code)

	// The same broken log token makes a run fail closed before any SQL: LOCK_UNAVAILABLE.
	args, resPath := e.orchestratorArgs(t, fixturePath("drill-join.sql"), "m6_drill_join", "attempt_nolog")
	code, _, _ = invoke(args...)
	require.Equal(t, 3, code)
	r, m := readResult(t, resPath)
	checkResultShape(t, m, 3)
	assert.Equal(t, "LOCK_UNAVAILABLE", r.ResultCode)
	assert.False(t, r.ExecutionStarted)
	assert.Zero(t, r.ReadCount)
}

func TestExampleConfigLoads(t *testing.T) {
	for _, v := range []string{"KSQL_FLOW_CUSTOMERS_API_TOKEN", "KSQL_FLOW_DEALS_API_TOKEN", "KSQL_FLOW_CSV_API_TOKEN", "KSQL_FLOW_LOG_WRITE_API_TOKEN"} {
		t.Setenv(v, "tok-"+v)
	}
	p, err := LoadConfig(filepath.Join(pkgDir, "testdata", "config.example.json"), "sandbox")
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:43123", p.BaseURL)
	assert.Equal(t, map[string]string{"顧客管理": "105", "案件管理": "106", "KSQL_FLOW_TEST_CSV1": "107", "KSQL_FLOW_JOB_LOG": "104"}, p.appIDs())
	assert.Equal(t, "104", p.LogApp.AppID)
	assert.Equal(t, "tok-KSQL_FLOW_LOG_WRITE_API_TOKEN", p.LogApp.Token)
	assert.EqualValues(t, 200000, *p.Limits.MaxReadRows)
	assert.Nil(t, p.Limits.MaxTempRows)
}
