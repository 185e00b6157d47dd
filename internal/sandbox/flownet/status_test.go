package flownet

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func keysOf(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "%v is not an object", v)
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s ...string) []string { sort.Strings(s); return s }

// The status JSON keys are the contract's (§1.4): list mode has no detail keys, terminal Runs
// have no activity, detail mode has invocations/node_states/reconciliation/recovery_identifiers,
// and nothing anywhere is called lease_token.
func TestStatusJSONShape(t *testing.T) {
	inst := "local-pid://h/1"
	doc := &statusDoc{NetworkID: "net", Profile: "p",
		Lock: &statusLock{RecordID: "7", OwnerInvocationID: "invoke_1", OwnerInstanceID: &inst},
		Runs: []*statusRun{
			{RunID: "netrun_a", Status: "RUNNING", LifecycleStatus: "ACTIVE", ResumeAllowed: true, Activity: "LIVE"},
			{RunID: "netrun_b", Status: "FAILED", LifecycleStatus: "ACTIVE", ResumeAllowed: true,
				Invocations: []statusInvocation{{"invoke_1", "NEW", "FAILED", "NODE_FAILED_OR_BLOCKED"}},
				NodeStates: []statusNodeState{{NodeID: "n1", Status: "FAILED", LatestAttemptNo: 1,
					LatestAttempt: &attemptSummaryJSON{"attempt_1", 1, "FAILED", "ASSERT_FAILED"}}},
				Reconciliation:      &statusReconcile{Inconsistencies: []inconsistency{}},
				RecoveryIdentifiers: &recoveryIdentifiers{ResolveNode: []runNodeRef{{"netrun_b", "n1"}}},
			},
		}}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "lease_token")
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	assert.Equal(t, sorted("network_id", "profile", "lock", "runs"), keysOf(t, raw))
	assert.Equal(t, sorted("record_id", "owner_invocation_id", "owner_instance_id", "heartbeat_at", "lease_expires_at", "stale_candidate", "revision"), keysOf(t, raw["lock"]))
	runs := raw["runs"].([]any)
	base := []string{"run_id", "business_key", "status", "resume_allowed", "lifecycle_status", "created_at", "started_at", "finished_at", "updated_at", "hold"}
	assert.Equal(t, sorted(append(base, "activity")...), keysOf(t, runs[0]))
	assert.Equal(t, sorted(append(base, "invocations", "node_states", "reconciliation", "recovery_identifiers")...), keysOf(t, runs[1]))
	r1 := runs[1].(map[string]any)
	assert.Equal(t, sorted("invocation_id", "mode", "status", "result_code"), keysOf(t, r1["invocations"].([]any)[0]))
	ns := r1["node_states"].([]any)[0]
	assert.Equal(t, sorted("node_id", "status", "status_reason", "idempotent", "latest_attempt_no", "active_attempt_id", "latest_attempt", "active_attempt"), keysOf(t, ns))
	assert.Equal(t, sorted("node_attempt_id", "attempt_no", "status", "result_code"), keysOf(t, ns.(map[string]any)["latest_attempt"]))
	ri := r1["recovery_identifiers"].(map[string]any)
	assert.Equal(t, sorted("resolve_node", "force_unlock_network", "run_network"), keysOf(t, ri))
	assert.Equal(t, []string{"resume_run"}, keysOf(t, ri["run_network"]))
	assert.Nil(t, ri["force_unlock_network"])
	assert.Nil(t, raw["runs"].([]any)[0].(map[string]any)["hold"])

	// The run-network JSON line has the seven fields of §1.3, arrays never null.
	line, err := json.Marshal(runOutput{Outcome: "REJECTED", InvocationResultCode: "INVALID_ARGUMENTS"}.normalized())
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(line, &out))
	assert.Equal(t, sorted("outcome", "run_id", "invocation_id", "aggregate_status", "invocation_result_code", "retry_brake_node_ids", "blocked_run_ids"), keysOf(t, out))
	assert.Equal(t, []any{}, out["retry_brake_node_ids"])
	assert.Equal(t, []any{}, out["blocked_run_ids"])
}
