package flownet

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/emulator"
)

// seedTwoScopes writes, for run "netrun_k" (network net_k) and for "netrun_k_trial2"
// (network net_k_trial2, a sub-scope whose ids extend the first), a resumable FAILED
// NETWORK_RUN, a NODE_STATE, a NODE_ATTEMPT, a RUNNING RUN_INVOCATION and a JOB log row.
// kintone's = / in on those non-unique text fields return both scopes' records.
func seedTwoScopes(t *testing.T, admin *kintoneapi.Client, state, audit, log, networkSuffix string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range []string{"k", "k_trial2"} {
		run, att := "netrun_"+k, "attempt_"+k
		add := func(app string, kv map[string]any) {
			_, _, err := admin.AddRecord(ctx, app, kintoneapi.Values(kv))
			require.NoError(t, err)
		}
		add(state, map[string]any{"record_key": "R:" + k, "record_type": "NETWORK_RUN", "run_id": run,
			"network_id": "net_" + k + networkSuffix, "business_key": k, "status": StatusFailed, "resume_allowed": "true",
			"lifecycle_status": "ACTIVE"})
		add(state, map[string]any{"record_key": "STATE:" + k, "record_type": "NODE_STATE", "run_id": run,
			"node_id": "n1", "status": StatusFailed, "idempotent": "true", "latest_attempt_no": 1, "revision": 1})
		add(audit, map[string]any{"record_key": "ATT:" + att, "record_type": "NODE_ATTEMPT", "run_id": run,
			"node_attempt_id": att, "attempt_key": "A:" + k, "node_id": "n1", "attempt_no": 1, "status": StatusFailed})
		add(audit, map[string]any{"record_key": "INV:invoke_" + k, "record_type": "RUN_INVOCATION", "run_id": run,
			"invocation_id": "invoke_" + k, "mode": "NEW", "status": StatusRunning})
		add(log, map[string]any{"record_type": "JOB", "attempt_id": att, "status": "FAILED"})
	}
}

// Reads by run_id, network_id and attempt_id keep only exact matches: without the filter
// findRun says MULTIPLE_RUNS, checkActiveRuns counts the sub-scope's Run as active and
// jobLog finds two rows for one attempt.
func TestReadsByNonUniqueTextKeepOnlyExactMatches(t *testing.T) {
	e := newStoreEnv(t, emulator.Options{})
	ctx := context.Background()
	apps := map[string]emulator.AppInfo{}
	for _, a := range e.srv.Apps() {
		apps[a.Role] = a
	}
	state, audit, log := apps["state"].ID, apps["audit"].ID, apps["log"].ID
	e.st.logApp = log
	e.st.kc.Tokens[log] = apps["log"].Tokens["read"]
	e.admin.Tokens[audit] = apps["audit"].Tokens["full"]
	e.admin.Tokens[log] = apps["log"].Tokens["full"]
	seedTwoScopes(t, e.admin, state, audit, log, "")

	// The emulator answers as kintone does: the query alone returns both scopes.
	raw, err := e.st.find(ctx, state, `record_type in ("NETWORK_RUN") and run_id in ("netrun_k")`)
	require.NoError(t, err)
	require.Len(t, raw, 2, "precondition: run_id in is a token match")

	x := &execution{st: e.st, profile: "p"}
	run, err := x.findRun(ctx, "netrun_k", "")
	require.NoError(t, err)
	require.NotNil(t, run)
	assert.Equal(t, "netrun_k", run.Str("run_id"))

	assert.NoError(t, x.checkActiveRuns(ctx, &Network{NetworkID: "net_k", MaxActiveRuns: 1}, "R:k"),
		"net_k_trial2's Run is not an active Run of net_k")

	row, err := x.jobLog(ctx, "attempt_k")
	require.NoError(t, err)
	require.NotNil(t, row)
	assert.Equal(t, "attempt_k", row.Str("attempt_id"))

	x.runID = "netrun_k"
	require.NoError(t, x.loadAttempts(ctx))
	require.Len(t, x.attempts["n1"], 1)
	assert.Equal(t, "attempt_k", x.attempts["n1"][0].id)

	states, err := e.st.findExact(ctx, state, `record_type in ("NODE_STATE") and run_id in ("netrun_k")`, "run_id", "netrun_k")
	require.NoError(t, err)
	require.Len(t, states, 1)
	assert.Equal(t, "STATE:k", states[0].Str("record_key"))
}

// status --run-id shows exactly the Run asked for, with its own Invocations and Node States
// only, when another Run's id extends it.
func TestStatusByRunIDIgnoresTokenMatches(t *testing.T) {
	s := newSandbox(t, nil)
	// Both Runs in the same network, so only the run_id filter tells them apart.
	for _, k := range []string{"k", "k_trial2"} {
		ctx := context.Background()
		run := "netrun_" + k
		add := func(app string, kv map[string]any) {
			_, _, err := s.admin.AddRecord(ctx, s.apps[app].ID, kintoneapi.Values(kv))
			require.NoError(t, err)
		}
		add("state", map[string]any{"record_key": "R:" + k, "record_type": "NETWORK_RUN", "run_id": run, "network_id": "net",
			"business_key": k, "status": StatusFailed, "resume_allowed": "true", "lifecycle_status": "ACTIVE",
			"resolved_profile_snapshot": `{"profile":"` + testProfile + `"}`})
		add("state", map[string]any{"record_key": "STATE:" + k, "record_type": "NODE_STATE", "run_id": run, "node_id": "n1",
			"status": StatusFailed, "idempotent": "true", "latest_attempt_no": 1, "revision": 1})
		add("audit", map[string]any{"record_key": "INV:invoke_" + k, "record_type": "RUN_INVOCATION", "run_id": run,
			"invocation_id": "invoke_" + k, "mode": "NEW", "status": StatusFailed})
	}
	r := s.flownet("status", "net", "--profile", testProfile, "--run-id", "netrun_k", "--json")
	require.Equal(t, 0, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
	var doc statusDoc
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Len(t, doc.Runs, 1)
	assert.Equal(t, "netrun_k", doc.Runs[0].RunID)
	require.Len(t, doc.Runs[0].Invocations, 1)
	assert.Equal(t, "invoke_k", doc.Runs[0].Invocations[0].InvocationID)
	assert.Len(t, doc.Runs[0].NodeStates, 1)
}

// The NETWORK_LOCK record holds exactly the fields the product writes (§3.7), held and
// released: nothing added for the harness's convenience.
func TestNetworkLockWritesOnlyProductFields(t *testing.T) {
	e := newStoreEnv(t, emulator.Options{})
	ctx := context.Background()
	l, err := acquireLock(ctx, e.st, "p", "net", "invoke_1", "local-pid://h/1", time.Minute, 15*time.Second, time.Now)
	require.NoError(t, err)
	held, err := e.st.byKey(ctx, e.st.stateApp, l.recordKey)
	require.NoError(t, err)
	assert.Equal(t, sorted("record_key", "record_type", "lock_key", "profile", "owner_invocation_id", "lease_token",
		"started_at", "heartbeat_at", "lease_expires_at", "status", "revision", "status_reason"), nonEmptyUserFields(held))

	require.NoError(t, l.release(ctx, StatusSuccess, "OK"))
	n1, _ := N1Key("p", "net")
	tomb, err := e.st.byKey(ctx, e.st.stateApp, lockDoneKey(n1, l.leaseToken))
	require.NoError(t, err)
	require.NotNil(t, tomb)
	// lock_key, owner_invocation_id and lease_token are cleared: the tombstone names no
	// network or owner (a live cleanup cannot trace it to a scope either).
	assert.Equal(t, sorted("record_key", "record_type", "profile", "started_at", "heartbeat_at", "lease_expires_at",
		"status", "revision", "status_reason", "finished_at"), nonEmptyUserFields(tomb))
}

// nonEmptyUserFields lists the codes of a record's non-system fields that hold a value.
func nonEmptyUserFields(r kintoneapi.Record) []string {
	var out []string
	for code, f := range r {
		switch f.Type {
		case "__ID__", "__REVISION__", "RECORD_NUMBER", "CREATOR", "CREATED_TIME", "MODIFIER", "UPDATED_TIME", "STATUS", "STATUS_ASSIGNEE", "CATEGORY":
			continue
		}
		if s := r.Str(code); s != "" && s != "[]" && s != "null" {
			out = append(out, code)
		}
	}
	return sorted(out...)
}
