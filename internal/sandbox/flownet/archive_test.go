package flownet

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// archive-run against the in-process emulator: the JSON union, exit codes, the audit and the
// tombstone (product-contract §1.9).

func (s *sandbox) putNetworkRun(runID, networkID, status string) {
	s.t.Helper()
	_, _, err := s.admin.AddRecord(context.Background(), s.apps["state"].ID, kintoneapi.Values(map[string]any{
		"record_key": "R1:" + runID, "record_type": "NETWORK_RUN", "run_id": runID, "network_id": networkID,
		"resolved_profile_snapshot": `{"profile":"` + testProfile + `"}`, "status": status, "lifecycle_status": "ACTIVE", "resume_allowed": "true"}))
	require.NoError(s.t, err)
}

// store is a FlowNet store on the sandbox's environment (its own tokens).
func (s *sandbox) store(t *testing.T) *store {
	t.Helper()
	st, err := newCLI(s.environ, io.Discard, io.Discard).newStore(false, time.Minute)
	require.NoError(t, err)
	return st
}

func archiveJSON(t *testing.T, r cmdResult) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &out), r.stdout+r.stderr)
	for _, k := range []string{"outcome", "run_id", "event_id", "lock_released"} {
		assert.Contains(t, out, k)
	}
	return out
}

func TestArchiveRunClosesAFailedRunOnceUnderTheLock(t *testing.T) {
	s := newSandbox(t, nil)
	ctx := context.Background()
	net := s.network("network-midfail.yaml")
	n, errs := LoadNetwork(net)
	require.Empty(t, errs)
	reason := s.reasonFile("close the drill run")
	for id, status := range map[string]string{"netrun_failed": "FAILED", "netrun_success": "SUCCESS", "netrun_running": "RUNNING"} {
		s.putNetworkRun(id, n.NetworkID, status)
	}

	r := s.flownet("archive-run", net, "--run-id", "netrun_failed", "--reason-file", reason)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	out := archiveJSON(t, r)
	assert.Equal(t, "ARCHIVED", out["outcome"])
	assert.Equal(t, "RECORDED", out["audit"])
	assert.Equal(t, true, out["lock_released"])
	ev, _ := out["event_id"].(string)
	require.True(t, strings.HasPrefix(ev, "archive_"), ev)

	st := s.store(t)
	run, err := findRunByID(ctx, st, "netrun_failed")
	require.NoError(t, err)
	assert.Equal(t, "ARCHIVED", run.Str("lifecycle_status"))
	assert.Equal(t, "FAILED", run.Str("status"))
	assert.Equal(t, float64(atoi(run.Revision())), out["run_revision"])
	audit, err := st.byKey(ctx, st.auditApp, "OP:"+ev)
	require.NoError(t, err)
	require.NotNil(t, audit)
	assert.Equal(t, "OPERATION_AUDIT", audit.Str("record_type"))
	assert.Equal(t, "RUN_ARCHIVED", audit.Str("result_code"))
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(audit.Str("reason")), &doc))
	assert.Equal(t, "flownet-test", doc["requested_by"])
	assert.Equal(t, "close the drill run", doc["reason"])
	assert.Equal(t, "FAILED", doc["previous_status"])
	assert.Equal(t, float64(atoi(run.Revision())-1), doc["run_revision_before"])
	locks, err := st.findAll(ctx, st.stateApp, `record_type in ("NETWORK_LOCK")`)
	require.NoError(t, err)
	require.Len(t, locks, 1)
	assert.True(t, strings.HasPrefix(locks[0].Str("record_key"), "LOCKDONE:"))
	assert.Equal(t, "SUCCESS", locks[0].Str("status"))
	assert.Equal(t, "NORMAL", locks[0].Str("status_reason"))

	r = s.flownet("archive-run", net, "--run-id", "netrun_failed", "--reason-file", reason)
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "ALREADY_ARCHIVED", archiveJSON(t, r)["outcome"])

	for id, code := range map[string]string{"netrun_success": "RUN_STATUS_NOT_CLOSABLE", "netrun_running": "RUN_NOT_TERMINAL", "netrun_none": "RUN_READ_FAILED"} {
		r = s.flownet("archive-run", net, "--run-id", id, "--reason-file", reason)
		assert.Equal(t, 1, r.code, id)
		out = archiveJSON(t, r)
		assert.Equal(t, "REJECTED", out["outcome"], id)
		assert.Equal(t, code, out["code"], id)
		assert.Equal(t, true, out["lock_released"], id)
	}

	// A lock someone else holds is never taken over: LOCK_CONFLICT, holding nothing.
	s.putNetworkRun("netrun_failed2", n.NetworkID, "FAILED")
	held, err := acquireLock(ctx, st, testProfile, n.NetworkID, "invoke_other", "i", time.Minute, 15*time.Second, time.Now)
	require.NoError(t, err)
	r = s.flownet("archive-run", net, "--run-id", "netrun_failed2", "--reason-file", reason)
	assert.Equal(t, 1, r.code)
	out = archiveJSON(t, r)
	assert.Equal(t, "REJECTED", out["outcome"])
	assert.Equal(t, "LOCK_CONFLICT", out["code"])
	assert.Equal(t, true, out["lock_released"])
	assert.Nil(t, out["run_revision"])
	require.NoError(t, held.release(ctx, StatusSuccess, "NORMAL"))

	// An archived Run is never resumed.
	r = s.flownet("run-network", net, "--resume-run", "netrun_failed", "--json")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout+r.stderr, "RUN_NOT_RESUMABLE")
}
