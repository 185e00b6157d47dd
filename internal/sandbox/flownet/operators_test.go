package flownet

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// The operator commands against the in-process emulator: every refusal leaves every record's
// $revision as it was; what they write is exactly the contract's.

func (s *sandbox) reasonFile(text string) string {
	s.t.Helper()
	p := filepath.Join(s.t.TempDir(), "reason.txt")
	require.NoError(s.t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// operator is the sandbox with the operator identities every operator command needs.
func (s *sandbox) operator() *sandbox {
	s.environ = append(s.environ, "KSQL_FLOWNET_SERVICE_PRINCIPAL=flownet-service")
	return s
}

// putRun writes a bare NETWORK_RUN of status for the hold commands.
func (s *sandbox) putRun(runID, status string) {
	s.t.Helper()
	_, _, err := s.admin.AddRecord(context.Background(), s.apps["state"].ID, kintoneapi.Values(map[string]any{
		"record_key": "R1:" + runID, "record_type": "NETWORK_RUN", "run_id": runID, "network_id": "net_ops",
		"status": status, "lifecycle_status": "ACTIVE", "resume_allowed": "true"}))
	require.NoError(s.t, err)
}

func TestCancelRunHoldLifecycle(t *testing.T) {
	s := newSandbox(t, nil)
	reason := s.reasonFile("stop for the drill")
	s.putRun("netrun_live", "RUNNING")
	s.putRun("netrun_done", "FAILED")

	r := s.flownet("cancel-run", "--run-id", "netrun_live")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "Invalid cancel-run arguments:\n- --reason-file is required\n", r.stderr)
	r = s.flownet("cancel-run", "--run-id", "netrun_nope", "--reason-file", reason)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [RECORD_NOT_FOUND]: ")

	before := s.revisions()
	r = s.flownet("cancel-run", "--run-id", "netrun_done", "--reason-file", reason)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [RUN_ALREADY_TERMINAL]: ")
	r = s.flownet("cancel-run", "--run-id", "netrun_live", "--release", "--reason-file", reason)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "RELEASED: CANCEL:netrun_live (revision none).\n", r.stdout)
	assert.Equal(t, before, s.revisions(), "a refusal and a no-op release write nothing")

	r = s.flownet("cancel-run", "--run-id", "netrun_live", "--reason-file", reason)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "REQUESTED: CANCEL:netrun_live (revision 1).\n", r.stdout)
	hold := s.all("state", `record_key in ("CANCEL:netrun_live")`)
	require.Len(t, hold, 1)
	assert.Equal(t, []string{"CANCEL_REQUEST", "netrun_live"}, []string{hold[0].Str("record_type"), hold[0].Str("run_id")})
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(hold[0].Str("status_reason")), &doc))
	assert.Equal(t, "REQUESTED", doc["state"])
	assert.Equal(t, "flownet-test", doc["requested_by"])
	assert.Equal(t, "stop for the drill", doc["reason"])
	assert.Nil(t, doc["accepted_at"])

	before = s.revisions()
	r = s.flownet("cancel-run", "--run-id", "netrun_live", "--reason-file", reason)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "REQUESTED: CANCEL:netrun_live (revision 1).\n", r.stdout, "a second STOP is a no-op")
	assert.Equal(t, before, s.revisions())

	r = s.flownet("cancel-run", "--run-id", "netrun_live", "--release", "--reason-file", reason)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "RELEASED: CANCEL:netrun_live (revision 2).\n", r.stdout)
	hold = s.all("state", `record_key in ("CANCEL:netrun_live")`)
	require.NoError(t, json.Unmarshal([]byte(hold[0].Str("status_reason")), &doc))
	assert.Equal(t, "RELEASED", doc["state"])
	assert.Equal(t, "flownet-test", doc["release_requested_by"])
	assert.NotNil(t, doc["released_at"])

	r = s.flownet("cancel-run", "--run-id", "netrun_live", "--reason-file", reason)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "REQUESTED: CANCEL:netrun_live (revision 3).\n", r.stdout, "a new STOP re-opens a released hold")
	hold = s.all("state", `record_key in ("CANCEL:netrun_live")`)
	doc = nil
	require.NoError(t, json.Unmarshal([]byte(hold[0].Str("status_reason")), &doc))
	assert.Equal(t, "REQUESTED", doc["state"])
	assert.Nil(t, doc["released_at"])
}

// putLock writes a held NETWORK_LOCK of net as FlowNet would, expiring at expires.
func (s *sandbox) putLock(net, owner, instance string, expires time.Time) string {
	s.t.Helper()
	n1, err := N1Key(testProfile, net)
	require.NoError(s.t, err)
	_, _, err = s.admin.AddRecord(context.Background(), s.apps["state"].ID, kintoneapi.Values(map[string]any{
		"record_key": "LOCK:" + n1, "record_type": "NETWORK_LOCK", "lock_key": n1, "profile": testProfile,
		"owner_invocation_id": owner, "lease_token": "token-" + net, "heartbeat_at": isoMillis(expires.Add(-time.Minute)),
		"lease_expires_at": isoMillis(expires), "status": "RUNNING", "revision": 4, "status_reason": "owner_instance_id=" + instance}))
	require.NoError(s.t, err)
	return n1
}

// deadPid is the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, cmd.Run())
	return cmd.ProcessState.Pid()
}

func TestForceUnlockNetworkRefusesWithoutWritingThenReleases(t *testing.T) {
	s := newSandbox(t, nil).operator()
	reason := s.reasonFile("owner killed in the drill")
	stale := time.Now().Add(-3 * time.Minute)
	dead := "local-pid://flownet-test-host/" + strconv.Itoa(deadPid(t))
	n1 := s.putLock("net_stale", "invoke_owner", dead, stale)
	s.putLock("net_live", "invoke_live", dead, time.Now().Add(time.Minute))
	s.putLock("net_self", "invoke_self", "local-pid://flownet-test-host/"+strconv.Itoa(os.Getpid()), stale)
	s.putLock("net_cloud", "invoke_cloud", "projects/p/locations/l/jobs/j/executions/e", stale)
	unlock := func(net, owner, method string, extra ...string) cmdResult {
		return s.flownet(append([]string{"force-unlock-network", net, "--profile", testProfile, "--expected-owner-invocation-id", owner,
			"--reason-file", reason, "--evidence-ref", "file:///evidence.json", "--stop-confirmed-by", "operator-a",
			"--stop-evidence-ref", "file:///evidence.json#stop", "--stop-method", method}, extra...)...)
	}

	before := s.revisions()
	refusals := []struct {
		net, owner, method, code, says string
	}{
		{"net_none", "invoke_x", stopManual, "LOCK_NOT_FOUND", "holds no lock"},
		{"net_stale", "invoke_owner_wrong", stopLocalPID, "OWNER_MISMATCH", "not the expected invoke_owner_wrong"},
		{"net_live", "invoke_live", stopManual, "LEASE_STILL_ACTIVE", "DATETIME allowance"},
		{"net_self", "invoke_self", stopLocalPID, "STOP_NOT_CONFIRMED", "still exists"},
		{"net_stale", "invoke_owner", stopCloudRun, "STOP_NOT_CONFIRMED", "not a valid Cloud Run"},
		{"net_cloud", "invoke_cloud", stopCloudRun, "STOP_NOT_CONFIRMED", "GCP_ACCESS_TOKEN is not configured"},
		{"net_stale", "invoke_owner", "m6_unknown_method", "STOP_NOT_CONFIRMED", "unknown stop confirmation method"},
	}
	for _, c := range refusals {
		r := unlock(c.net, c.owner, c.method)
		assert.Equal(t, 1, r.code, "%s %s", c.net, c.method)
		assert.Contains(t, r.stderr, "Error ["+c.code+"]: ", "%s %s", c.net, c.method)
		assert.Contains(t, r.stderr, c.says, "%s %s", c.net, c.method)
	}
	s.environ = append(s.environ, "KSQL_FLOWNET_GCP_ACCESS_TOKEN=ya29.sandbox")
	r := unlock("net_cloud", "invoke_cloud", stopCloudRun)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [STOP_NOT_CONFIRMED]: the sandbox FlowNet does not query the Cloud Run Admin API")
	r = unlock("net_stale", "invoke_owner", stopManual, "--stop-method", stopManual)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "- --stop-method was specified more than once")
	assert.Equal(t, before, s.revisions(), "no refusal writes anything")

	r = unlock("net_stale", "invoke_owner", stopLocalPID)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^RELEASED: `+n1+` \(previous owner invoke_owner, post revision 2\)\.\n`, r.stdout)
	tomb := s.all("state", `record_type in ("NETWORK_LOCK") and status in ("CANCELLED")`)
	require.Len(t, tomb, 1)
	assert.Equal(t, lockDoneKey(n1, "token-net_stale"), tomb[0].Str("record_key"))
	assert.Equal(t, []string{"", "", "", "NETWORK_LOCK_FORCE_RELEASED", "5"},
		[]string{tomb[0].Str("lock_key"), tomb[0].Str("owner_invocation_id"), tomb[0].Str("lease_token"), tomb[0].Str("status_reason"), tomb[0].Str("revision")})
	ops := s.all("audit", `record_type in ("OPERATION_AUDIT")`)
	require.Len(t, ops, 1)
	assert.Equal(t, "NETWORK_LOCK_FORCE_RELEASED", ops[0].Str("result_code"))
	assert.Empty(t, ops[0].Str("run_id"))
	var audit map[string]any
	require.NoError(t, json.Unmarshal([]byte(ops[0].Str("reason")), &audit))
	assert.Equal(t, map[string]any{"event_type": "NETWORK_LOCK_FORCE_RELEASED", "network_id": "net_stale", "profile": testProfile,
		"lock_key": n1, "record_id": tomb[0].ID(), "previous_owner_invocation_id": "invoke_owner", "previous_lease_token": "token-net_stale",
		"service_principal": "flownet-service", "requested_by": "flownet-test", "stop_confirmed_by": "operator-a", "stop_method": stopLocalPID,
		"stop_evidence_ref": "file:///evidence.json#stop", "reason": "owner killed in the drill", "evidence_ref": "file:///evidence.json",
		"post_release_revision": float64(2)},
		subset(audit, "event_type", "network_id", "profile", "lock_key", "record_id", "previous_owner_invocation_id", "previous_lease_token",
			"service_principal", "requested_by", "stop_confirmed_by", "stop_method", "stop_evidence_ref", "reason", "evidence_ref", "post_release_revision"))
	assert.Regexp(t, `^net_unlock_[0-9a-f-]{36}$`, audit["event_id"])
	assert.Equal(t, "OP:"+audit["event_id"].(string), ops[0].Str("record_key"))
	for _, k := range []string{"previous_heartbeat_at", "previous_lease_expires_at", "released_at"} {
		assert.NotEmpty(t, audit[k], k)
	}
}

func subset(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

func TestNonIdempotentNodeIsResolvedNotRerun(t *testing.T) {
	s := newSandbox(t, nil).operator()
	net := s.network("network-nonidem.yaml")
	r := s.flownet("run-network", net, "--business-key", "ni")
	require.Equal(t, 1, r.code, r.stderr)
	runID := runIDOf(t, r.stdout)
	r = s.flownet("run-network", net, "--business-key", "ni", "--resume")
	require.Equal(t, 1, r.code, r.stderr)
	g := s.graph(runID)
	require.Len(t, g.attempts["n2_nonidem"], 1, "a resume never re-runs a non-idempotent node")
	assert.Equal(t, "FAILED", g.states["n2_nonidem"].Str("status"))
	// Closed: the excluded root, then its descendant the scheduler BLOCKED (invsets.go).
	assert.Equal(t, `["n2_nonidem","n3_finalize"]`, g.invocations[1].Str("blocked_node_ids"))
	assert.Equal(t, `[]`, g.invocations[1].Str("selected_node_ids"))

	reason := s.reasonFile("completed by hand")
	resolve := func(node, to string, extra ...string) cmdResult {
		return s.flownet(append([]string{"resolve-node", "--run-id", runID, "--node-id", node, "--to", to, "--reason-file", reason,
			"--evidence-ref", "file:///e.json", "--stop-confirmed-by", "operator-a", "--stop-evidence-ref", "file:///e.json#stop"}, extra...)...)
	}
	before := s.revisions()
	for _, c := range []struct {
		node, to string
		extra    []string
		code     string
	}{
		{"n2_nonidem", "SUCCESS", []string{"--manual-completion", "--approved-by", "flownet-test"}, "DISTINCT_APPROVER_REQUIRED"},
		{"n2_nonidem", "SUCCESS", []string{"--manual-completion", "--approved-by", "flownet-service"}, "DISTINCT_APPROVER_REQUIRED"},
		{"n2_nonidem", "SUCCESS", []string{"--manual-completion"}, "DISTINCT_APPROVER_REQUIRED"},
		{"n2_nonidem", "SUCCESS", []string{"--approved-by", "approver-b"}, "MANUAL_COMPLETION_REQUIRED"},
		{"n2_nonidem", "FAILED", []string{"--manual-completion"}, "MANUAL_COMPLETION_REQUIRES_SUCCESS"},
		{"n2_nonidem", "SUCCESS", []string{"--compensation", "--approved-by", "approver-b"}, "MANUAL_COMPLETION_REQUIRED"},
		{"n1_extract", "FAILED", nil, "NODE_NOT_RESOLVABLE"},
		{"n9_missing", "FAILED", nil, "RECORD_NOT_FOUND"},
	} {
		r := resolve(c.node, c.to, c.extra...)
		assert.Equal(t, 1, r.code, "%v", c)
		assert.Contains(t, r.stderr, "Error ["+c.code+"]: ", "%v", c)
	}
	assert.Equal(t, before, s.revisions(), "no refusal writes anything")

	r = resolve("n2_nonidem", "SUCCESS", "--manual-completion", "--approved-by", "approver-b")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "RESOLVED: "+runID+"/n2_nonidem -> SUCCESS (revision 4).\n", r.stdout)
	g = s.graph(runID)
	st := g.states["n2_nonidem"]
	assert.Equal(t, []string{"SUCCESS", resolutionManualCompletion, "", "4"}, []string{st.Str("status"), st.Str("status_reason"), st.Str("active_attempt_id"), st.Str("revision")})
	att := g.attempts["n2_nonidem"][0]
	assert.Equal(t, []string{"FAILED", "ASSERT_FAILED"}, []string{att.Str("status"), att.Str("result_code")}, "the attempt is never modified")
	assert.Equal(t, before["audit/"+att.ID()], att.Revision())
	res := s.all("audit", `record_type in ("ATTEMPT_RESOLUTION")`)
	require.Len(t, res, 1)
	assert.Equal(t, []string{"ATTEMPT_RESOLVED", att.Str("node_attempt_id"), "SUCCESS", "file:///e.json", "flownet-service", "approver-b", "flownet-test"},
		[]string{res[0].Str("event_type"), res[0].Str("attempt_id"), res[0].Str("resolved_outcome"), res[0].Str("evidence_ref"),
			res[0].Str("service_principal"), res[0].Str("approved_by"), res[0].Str("requested_by")})
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(res[0].Str("reason")), &doc))
	assert.Equal(t, map[string]any{"resolution_type": resolutionManualCompletion,
		"reason": "completed by hand", "stop_confirmed_by": "operator-a", "stop_evidence_ref": "file:///e.json#stop", "resolved_at": doc["resolved_at"]},
		doc, "the reason JSON holds the five keys the real FlowNet writes")
	assert.Equal(t, resolutionKey(att.Str("node_attempt_id"), doc["resolved_at"].(string)), res[0].Str("record_key"))

	r = s.flownet("run-network", net, "--business-key", "ni", "--resume")
	require.Equal(t, 0, r.code, r.stderr)
	g = s.graph(runID)
	assert.Equal(t, "SUCCESS", g.run.Str("status"))
	assert.Equal(t, "SUCCESS", g.states["n3_finalize"].Str("status"))
	assert.Len(t, g.attempts["n2_nonidem"], 1)
}
