package flownet

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// record-job-unlock against the in-process emulator, fed with what the sandbox kSQL-Flow's
// force-unlock-job really prints: what it records, and that every refusal writes nothing —
// to the state and audit apps, and never anything to the JOB log.

const (
	unlockRunID = "netrun_jobunlock"
	unlockJobN1 = "ju_extract_job"
	unlockJobN2 = "ju_report_job"
)

// putUnlockRun writes a NETWORK_RUN created under profile (with its profile snapshot, as
// run-network writes it) and one Node State per node id → job id.
func (s *sandbox) putUnlockRun(runID, profile string, jobs map[string]string) {
	s.t.Helper()
	ctx := context.Background()
	run := map[string]any{"record_key": "R1:" + runID, "record_type": "NETWORK_RUN", "run_id": runID,
		"network_id": "net_jobunlock", "status": StatusUnknown, "lifecycle_status": "ACTIVE", "resume_allowed": "true"}
	if profile != "" {
		run["resolved_profile_snapshot"] = `{"profile":"` + profile + `","timezone":"Asia/Tokyo"}`
	}
	_, _, err := s.admin.AddRecord(ctx, s.apps["state"].ID, kintoneapi.Values(run))
	require.NoError(s.t, err)
	for node, job := range jobs {
		s.putNodeState(runID, node, job, "STATE:"+runID+"/"+node, StatusUnknown)
	}
}

func (s *sandbox) putNodeState(runID, node, job, key, status string) {
	s.t.Helper()
	_, _, err := s.admin.AddRecord(context.Background(), s.apps["state"].ID, kintoneapi.Values(map[string]any{
		"record_key": key, "record_type": "NODE_STATE", "run_id": runID, "node_id": node, "job_id": job,
		"node_state_key": key, "status": status, "idempotent": "true", "revision": 3}))
	require.NoError(s.t, err)
}

// holdJobLock writes the JOB log row a killed kSQL-Flow leaves behind: RUNNING, holding
// job_key <profile>:<job>.
func (s *sandbox) holdJobLock(job string) {
	s.t.Helper()
	_, _, err := s.admin.AddRecord(context.Background(), s.apps["log"].ID, kintoneapi.Values(map[string]any{
		"record_type": "JOB", "status": "RUNNING", "job_key": testProfile + ":" + job, "job_id": job, "profile": testProfile,
		"batch_id": "b7c1d2e3-0000-4000-8000-000000000001", "host": "killed-host", "correlation_id": unlockRunID,
		"runner_execution_started_at": "2026-11-29T10:00:00Z"}))
	require.NoError(s.t, err)
}

// forceUnlockJob runs the sandbox kSQL-Flow's force-unlock-job and returns the path of a
// file holding its LOCK_RECOVERY_RESULT line.
func (s *sandbox) forceUnlockJob(job string) (string, map[string]any) {
	s.t.Helper()
	cmd := exec.Command(flowsandboxBin(s.t), "ksql-flow", "force-unlock-job", "--job-key", testProfile+":"+job,
		"--reason", "holder killed in the drill", "--confirmed-by", "operator-a", "--evidence-ref", "file:///evidence/kill.json",
		"--profile", testProfile, "--config", envValue(s.environ, "KSQL_FLOW_CONFIG"), "--json")
	cmd.Env = s.environ
	out, err := cmd.Output()
	require.NoError(s.t, err, "force-unlock-job: %s", out)
	var doc map[string]any
	require.NoError(s.t, json.Unmarshal(out, &doc), string(out))
	return s.resultFile(string(out)), doc
}

func (s *sandbox) resultFile(text string) string {
	s.t.Helper()
	p := filepath.Join(s.t.TempDir(), "lock-recovery.json")
	require.NoError(s.t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func envValue(environ []string, name string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// logRevisions is the JOB log's $revision per record: FlowNet must never change it.
func (s *sandbox) logRevisions() map[string]string {
	out := map[string]string{}
	for _, r := range s.all("log", "") {
		out[r.ID()] = r.Revision()
	}
	return out
}

// recordJobUnlock runs record-job-unlock with every required option; set replaces the value
// of an option, extra is appended.
func (s *sandbox) recordJobUnlock(resultFile, runID, node string, set map[string]string, extra ...string) cmdResult {
	opts := [][2]string{{"--result-file", resultFile}, {"--run-id", runID}, {"--node-id", node},
		{"--reason-file", s.reasonFile("job lock left by the killed holder")}, {"--evidence-ref", "file:///evidence/kill.json"},
		{"--stop-confirmed-by", "operator-a"}}
	args := []string{"record-job-unlock"}
	for _, o := range opts {
		if v, ok := set[o[0]]; ok {
			o[1] = v
		}
		args = append(args, o[0], o[1])
	}
	return s.flownet(append(args, extra...)...)
}

func TestRecordJobUnlockAuditsTheRecoveryOfItsNode(t *testing.T) {
	s := newSandbox(t, nil).operator()
	s.putUnlockRun(unlockRunID, testProfile, map[string]string{"n1_extract": unlockJobN1, "n2_report": unlockJobN2})
	s.holdJobLock(unlockJobN1)
	file, result := s.forceUnlockJob(unlockJobN1)
	require.Equal(t, "RELEASED", result["outcome"])
	logBefore := s.logRevisions()

	r := s.recordJobUnlock(file, unlockRunID, "n1_extract", nil)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	assert.Regexp(t, `^RECORDED: RELEASED for `+testProfile+`:`+unlockJobN1+` \(job_unlock_[0-9a-f-]{36}\)\.\n$`, r.stdout)
	assert.Equal(t, logBefore, s.logRevisions(), "FlowNet never writes the JOB log")

	ops := s.all("audit", `record_type in ("OPERATION_AUDIT")`)
	require.Len(t, ops, 1)
	op := ops[0]
	assert.Equal(t, []string{unlockRunID, "RELEASED"}, []string{op.Str("run_id"), op.Str("result_code")})
	var audit map[string]any
	require.NoError(t, json.Unmarshal([]byte(op.Str("reason")), &audit))
	eventID, _ := audit["event_id"].(string)
	assert.Equal(t, "OP:"+eventID, op.Str("record_key"))
	assert.Contains(t, r.stdout, "("+eventID+")", "the printed event id is the audit's")
	assert.Equal(t, map[string]any{"event_type": "JOB_LOCK_FORCE_UNLOCK_RECORDED", "run_id": unlockRunID, "node_id": "n1_extract",
		"job_id": unlockJobN1, "service_principal": "flownet-service", "requested_by": "flownet-test",
		"stop_confirmed_by": "operator-a", "reason": "job lock left by the killed holder", "evidence_ref": "file:///evidence/kill.json",
		"lock_recovery_result": result},
		subset(audit, "event_type", "run_id", "node_id", "job_id", "service_principal", "requested_by", "stop_confirmed_by",
			"reason", "evidence_ref", "lock_recovery_result"))
	recordedAt, _ := audit["recorded_at"].(string)
	_, ok := parseTime(recordedAt)
	assert.True(t, ok, "recorded_at %q", recordedAt)
	assert.True(t, sameValues(op, vals(map[string]any{"resolved_at": recordedAt})), "resolved_at is recorded_at (to the minute)")
	assert.Len(t, audit, 12, "exactly the contract's fields: %v", audit)

	// Every valid outcome is recorded, the holder absent where the rule says so.
	for _, c := range []struct{ outcome, holder string }{
		{"NOT_FOUND", `"recordId":null,"before":null`},
		{"UNCONFIRMED", `"recordId":null,"before":null`},
		{"UNCONFIRMED", `"recordId":"7","before":{"batchId":"b","startedAt":null,"host":"h"}`},
		{"NOT_RUNNING", `"recordId":"7","before":{"batchId":"b","startedAt":null,"host":"h"}`},
		{"CONFLICT", `"recordId":"7","before":{"batchId":"b","startedAt":null,"host":"h"}`},
	} {
		f := s.resultFile(`{"kind":"LOCK_RECOVERY_RESULT","formatVersion":1,"jobKey":"` + testProfile + `:` + unlockJobN2 +
			`","outcome":"` + c.outcome + `",` + c.holder + `,"executedAt":"2026-11-29T10:05:00.000Z"}` + "\n")
		r := s.recordJobUnlock(f, unlockRunID, "n2_report", nil)
		require.Equal(t, 0, r.code, "%v: %s", c, r.stderr)
		assert.True(t, strings.HasPrefix(r.stdout, "RECORDED: "+c.outcome+" for "+testProfile+":"+unlockJobN2+" (job_unlock_"), r.stdout)
	}
	assert.Len(t, s.all("audit", `record_type in ("OPERATION_AUDIT")`), 6)
	assert.Equal(t, logBefore, s.logRevisions())
}

// A result whose jobKey is another node's (or the same job under another profile) is
// refused and writes nothing.
func TestRecordJobUnlockRefusesAForeignJobKey(t *testing.T) {
	s := newSandbox(t, nil).operator()
	s.putUnlockRun(unlockRunID, testProfile, map[string]string{"n1_extract": unlockJobN1, "n2_report": unlockJobN2})
	s.holdJobLock(unlockJobN2)
	file, _ := s.forceUnlockJob(unlockJobN2)
	before, logBefore := s.revisions(), s.logRevisions()

	r := s.recordJobUnlock(file, unlockRunID, "n1_extract", nil)
	assert.Equal(t, 1, r.code)
	assert.Empty(t, r.stdout)
	assert.Equal(t, "Error [JOB_KEY_MISMATCH]: the recovery result is for job key "+testProfile+":"+unlockJobN2+
		", but node n1_extract of Run "+unlockRunID+" holds job key "+testProfile+":"+unlockJobN1+"\n", r.stderr)

	other := s.resultFile(`{"kind":"LOCK_RECOVERY_RESULT","formatVersion":1,"jobKey":"prod:` + unlockJobN1 +
		`","outcome":"NOT_FOUND","recordId":null,"before":null,"executedAt":"2026-11-29T10:05:00.000Z"}`)
	r = s.recordJobUnlock(other, unlockRunID, "n1_extract", nil)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [JOB_KEY_MISMATCH]: ")
	assert.Equal(t, before, s.revisions(), "a refusal writes nothing")
	assert.Equal(t, logBefore, s.logRevisions())
	assert.Empty(t, s.all("audit", `record_type in ("OPERATION_AUDIT")`))
}

func TestRecordJobUnlockRefusalsWriteNothing(t *testing.T) {
	s := newSandbox(t, nil).operator()
	s.putUnlockRun(unlockRunID, testProfile, map[string]string{"n1_extract": unlockJobN1})
	s.putNodeState(unlockRunID, "n1_extract", unlockJobN1, "STATE:duplicate", StatusUnknown)
	s.putUnlockRun("netrun_noprofile", "", map[string]string{"n1_extract": unlockJobN1})
	s.putUnlockRun("netrun_other", testProfile, map[string]string{"n1_extract": unlockJobN1})
	result := func(body string) string {
		return s.resultFile(`{"kind":"LOCK_RECOVERY_RESULT","formatVersion":1,"jobKey":"` + testProfile + ":" + unlockJobN1 + `",` + body + `}`)
	}
	good := result(`"outcome":"NOT_FOUND","recordId":null,"before":null,"executedAt":"2026-11-29T10:05:00.000Z"`)
	holder := `"recordId":"7","before":{"batchId":"b","startedAt":null,"host":"h"}`
	emptyReason := s.reasonFile("  \n")
	before, logBefore := s.revisions(), s.logRevisions()

	for _, c := range []struct {
		name      string
		file, run string
		set       map[string]string
		extra     []string
		stderr    string
	}{
		{"an option twice", good, unlockRunID, nil, []string{"--stop-confirmed-by", "operator-b"}, "- --stop-confirmed-by was specified more than once"},
		{"an unknown option", good, unlockRunID, nil, []string{"--force"}, "- unknown option --force"},
		{"an empty reason file", good, unlockRunID, map[string]string{"--reason-file": emptyReason}, nil, "Error [AUDIT_INPUT_REQUIRED]: reason is empty"},
		{"an unreadable reason file", good, unlockRunID, map[string]string{"--reason-file": filepath.Join(t.TempDir(), "none.txt")}, nil, "Error [AUDIT_INPUT_REQUIRED]: --reason-file "},
		{"an empty evidence ref", good, unlockRunID, map[string]string{"--evidence-ref": " "}, nil, "Error [AUDIT_INPUT_REQUIRED]: --evidence-ref is empty"},
		{"an empty confirmer", good, unlockRunID, map[string]string{"--stop-confirmed-by": ""}, nil, "Error [AUDIT_INPUT_REQUIRED]: --stop-confirmed-by is empty"},
		{"no result file", filepath.Join(t.TempDir(), "missing.json"), unlockRunID, nil, nil, "Error [INVALID_LOCK_RECOVERY_RESULT]: "},
		{"not JSON", s.resultFile("RELEASED"), unlockRunID, nil, nil, "is not one JSON object"},
		{"two JSON objects", s.resultFile(`{"kind":"LOCK_RECOVERY_RESULT"} {}`), unlockRunID, nil, nil, "is not one JSON object"},
		{"an inspection, not a recovery", s.resultFile(`{"kind":"LOCK_INSPECTION_RESULT","formatVersion":1,"jobKey":"sandbox:x","locked":true}`),
			unlockRunID, nil, nil, "kind must be LOCK_RECOVERY_RESULT"},
		{"format version 2", s.resultFile(`{"kind":"LOCK_RECOVERY_RESULT","formatVersion":2,"jobKey":"sandbox:x","outcome":"NOT_FOUND","recordId":null,"before":null}`),
			unlockRunID, nil, nil, "formatVersion must be 1"},
		{"no job key", s.resultFile(`{"kind":"LOCK_RECOVERY_RESULT","formatVersion":1,"outcome":"NOT_FOUND","recordId":null,"before":null}`),
			unlockRunID, nil, nil, "jobKey must be a non-empty string"},
		{"an unknown outcome", result(`"outcome":"STOLEN",` + holder), unlockRunID, nil, nil, "outcome must be RELEASED"},
		{"NOT_FOUND with a holder", result(`"outcome":"NOT_FOUND",` + holder), unlockRunID, nil, nil, "outcome NOT_FOUND requires recordId and before to be null"},
		{"RELEASED without before", result(`"outcome":"RELEASED","recordId":"7","before":null`), unlockRunID, nil, nil, "outcome RELEASED requires recordId"},
		{"CONFLICT without recordId", result(`"outcome":"CONFLICT","before":{"batchId":"b"}`), unlockRunID, nil, nil, "outcome CONFLICT requires recordId"},
		{"UNCONFIRMED with a malformed before", result(`"outcome":"UNCONFIRMED","recordId":null,"before":"b"`), unlockRunID, nil, nil,
			"recordId must be null or a string and before null or an object"},
		{"an unknown Run", good, "netrun_missing", nil, nil, "Error [RECORD_NOT_FOUND]: no Run with run_id netrun_missing"},
		{"an unknown node", good, "netrun_other", map[string]string{"--node-id": "n9_missing"}, nil, "Error [RECORD_NOT_FOUND]: Run netrun_other has no Node State for n9_missing"},
		{"two Node States of the node", good, unlockRunID, nil, nil, "Error [NODE_STATE_NOT_UNIQUE]: "},
		{"a Run without a profile", good, "netrun_noprofile", nil, nil, "Error [JOB_KEY_MISMATCH]: Run netrun_noprofile records no profile"},
	} {
		r := s.recordJobUnlock(c.file, c.run, "n1_extract", c.set, c.extra...)
		assert.Equal(t, 1, r.code, c.name)
		assert.Empty(t, r.stdout, c.name)
		assert.Contains(t, r.stderr, c.stderr, c.name)
	}
	r := s.flownet("record-job-unlock", "--run-id", unlockRunID)
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "Invalid record-job-unlock arguments:\n- --result-file is required\n- --node-id is required\n- --reason-file is required\n"+
		"- --evidence-ref is required\n- --stop-confirmed-by is required\n", r.stderr)

	env := s.environ
	s.environ = append([]string{}, env...)
	s.environ = append(s.environ, "KSQL_FLOWNET_SERVICE_PRINCIPAL=")
	r = s.recordJobUnlock(good, unlockRunID, "n1_extract", nil)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [CONFIG_MISSING]: required environment variable(s) not set: KSQL_FLOWNET_SERVICE_PRINCIPAL")
	s.environ = env

	assert.Equal(t, before, s.revisions(), "no refusal writes anything")
	assert.Equal(t, logBefore, s.logRevisions())
}
