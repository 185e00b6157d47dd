package flownet

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// poll-requests against the in-process emulator; its children (status, run-network, …) are
// the flowsandbox binary built for the integration tests.

func writeAllowlist(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "allow.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestAllowlistConfigErrors(t *testing.T) {
	dir := t.TempDir()
	net := filepath.Join(dir, "net.yaml")
	copyDir(t, filepath.Join("..", "..", "..", "features", "fixtures", "jobs"), filepath.Join(dir, "jobs"))
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "features", "fixtures", "networks", "network-success.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(net, bytes.ReplaceAll(raw, []byte("../jobs/"), []byte("jobs/")), 0o644))
	cases := []struct{ name, body, code string }{
		{"ok", "networks:\n  - network_id: m5_success\n    definition_path: " + net + "\n    app_start: true\n", ""},
		{"not yaml", "networks: [\n", codeAllowlistParseError},
		{"duplicate key", "networks: []\nnetworks: []\n", codeAllowlistParseError},
		{"root list", "- a\n", codeConfigShapeInvalid},
		{"unknown root key", "networks: []\nextra: 1\n", codeConfigShapeInvalid},
		{"empty list", "networks: []\n", codeConfigShapeInvalid},
		{"entry not a map", "networks:\n  - x\n", codeNetworkEntryInvalid},
		{"unknown entry key", "networks:\n  - network_id: m5_success\n    definition_path: " + net + "\n    owner: me\n", codeNetworkEntryInvalid},
		{"app_start not bool", "networks:\n  - network_id: m5_success\n    definition_path: " + net + "\n    app_start: \"yes\"\n", codeNetworkEntryInvalid},
		{"missing definition", "networks:\n  - network_id: m5_success\n", codeNetworkEntryInvalid},
		{"relative definition", "networks:\n  - network_id: m5_success\n    definition_path: net.yaml\n", codeDefinitionPathNotAbsolute},
		{"duplicate network", "networks:\n  - network_id: m5_success\n    definition_path: " + net + "\n  - network_id: m5_success\n    definition_path: " + net + "\n", codeDuplicateNetwork},
		{"bad definition", "networks:\n  - network_id: m5_success\n    definition_path: " + filepath.Join(dir, "missing.yaml") + "\n", codeNetworkDefinitionInvalid},
		{"id mismatch", "networks:\n  - network_id: other\n    definition_path: " + net + "\n", codeNetworkIDMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := loadAllowlist(writeAllowlist(t, tc.body))
			if tc.code == "" {
				require.NoError(t, err)
				require.Len(t, entries, 1)
				assert.True(t, entries[0].AppStart)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.code, errCode(err, ""), "%v", err)
		})
	}
	_, err = loadAllowlist("relative.yaml")
	assert.Equal(t, codeAllowlistPathNotAbsolute, errCode(err, ""))
	_, err = loadAllowlist(filepath.Join(dir, "none.yaml"))
	assert.Equal(t, codeAllowlistUnreadable, errCode(err, ""))

	c := newCLI([]string{"KSQL_FLOWNET_BASE_URL=https://x", "KSQL_FLOWNET_REQUEST_APP_ID=1", "KSQL_FLOWNET_REQUEST_API_TOKEN=t",
		"KSQL_FLOWNET_REQUEST_ALLOWLIST_PATH=" + writeAllowlist(t, cases[0].body), "KSQL_FLOWNET_PROFILE=p",
		"KSQL_FLOWNET_REQUEST_HEARTBEAT_INTERVAL_MS=1000", "KSQL_FLOWNET_REQUEST_STALE_AFTER_MS=1000"}, nil, nil)
	_, err = c.loadPollConfig()
	assert.Equal(t, codeThresholdInvalid, errCode(err, ""), "stale-after must exceed the heartbeat")
	c.environ = append(c.environ, "KSQL_FLOWNET_REQUEST_STALE_AFTER_MS=abc")
	_, err = c.loadPollConfig()
	assert.Equal(t, codeThresholdInvalid, errCode(err, ""))
}

func TestEncodeURIComponentAndValidation(t *testing.T) {
	assert.Equal(t, "Administrator", encodeURIComponent("Administrator"))
	assert.Equal(t, "a%40b.c%20d%2F%E5%8F%96-_.!~*'()", encodeURIComponent("a@b.c d/取-_.!~*'()"))
	rec := func(kv ...any) opRequest {
		r := kintoneapi.Record{"$id": {Value: "7"}, "$revision": {Value: "1"}, fieldCreator: {Value: map[string]any{"code": "u1"}}}
		for i := 0; i+1 < len(kv); i += 2 {
			r[kv[i].(string)] = kintoneapi.Field{Value: kv[i+1]}
		}
		q, ok := parseEnvelope(r)
		require.True(t, ok)
		return q
	}
	assert.Empty(t, validateRequested(rec("request_type", "RERUN", "run_id", "r", "reason", "x", "request_state", "REQUESTED")))
	assert.Equal(t, []string{issueFieldNotAllowed, issueRequired}, validateRequested(rec("request_type", "STOP", "reason", "x", "rerun_from_node", "n")))
	assert.Equal(t, []string{issueRequired}, validateRequested(rec("request_type", "START", "reason", "x")))
	assert.Equal(t, []string{issueStateFieldsInvalid, issueUnknownChoice}, validateRequested(rec("request_type", "RERUN", "run_id", "r", "reason", "x", "claimed_host", "h", "cancel_requested", []any{"nope"})))
	q := rec("request_type", "RERUN", "run_id", "r", "reason", "x", "cancel_requested", []any{cancelOption})
	assert.True(t, q.cancelRequested())
	by, err := q.requestedBy()
	require.NoError(t, err)
	assert.Equal(t, "app-request:7:u1", by)
	_, ok := parseEnvelope(kintoneapi.Record{"$id": {Value: "x"}, "$revision": {Value: "1"}})
	assert.False(t, ok, "a record without a decimal $id cannot be identified")
}

// pollSandbox is the integration sandbox plus the request app and an allow-list.
type pollSandbox struct {
	*sandbox
	req *kintoneapi.Client // full token of the request app
}

// newPollSandbox allow-lists network-success.yaml as m5_success.
func newPollSandbox(t *testing.T) *pollSandbox {
	s := newSandbox(t, nil)
	allowlist := "networks:\n  - network_id: m5_success\n    definition_path: " + s.network("network-success.yaml") + "\n"
	hc, err := kintoneapi.HTTPClientWithCA(s.srv.CAFile())
	require.NoError(t, err)
	ps := &pollSandbox{sandbox: s, req: kintoneapi.New(s.srv.BaseURL(), hc, map[string]string{s.apps["request"].ID: s.apps["request"].Tokens["full"]})}
	s.environ = append(s.environ,
		"KSQL_FLOWNET_REQUEST_APP_ID="+s.apps["request"].ID,
		"KSQL_FLOWNET_REQUEST_API_TOKEN="+s.apps["request"].Tokens["poller"],
		"KSQL_FLOWNET_REQUEST_ALLOWLIST_PATH="+writeAllowlist(t, allowlist),
		"KSQL_FLOWNET_REQUEST_HEARTBEAT_INTERVAL_MS=200",
		"KSQL_FLOWNET_REQUEST_STALE_AFTER_MS=1000")
	return ps
}

func (ps *pollSandbox) poll(args ...string) cmdResult {
	var out, errb bytes.Buffer
	c := newCLI(ps.environ, &out, &errb)
	c.self = []string{flowsandboxBin(ps.t), "flownet"}
	code := c.dispatch(append([]string{"poll-requests"}, args...))
	return cmdResult{code, out.String(), errb.String()}
}

// failedRun runs net with business key key into a FAILED Run (the customers token is
// invalid, so the first node fails) and returns its run_id.
func (ps *pollSandbox) failedRun(net, key string) string {
	ps.t.Helper()
	env := ps.environ
	ps.environ = append(append([]string(nil), env...), "TEST_CUSTOMERS_TOKEN=invalid")
	fr := ps.flownet("run-network", net, "--business-key", key)
	ps.environ = env
	require.Equal(ps.t, 1, fr.code, fr.stderr)
	return runIDOf(ps.t, fr.stdout)
}

func (ps *pollSandbox) add(kv map[string]any) string {
	ps.t.Helper()
	id, _, err := ps.req.AddRecord(context.Background(), ps.sandbox.apps["request"].ID, kintoneapi.Values(kv))
	require.NoError(ps.t, err)
	return id
}

func (ps *pollSandbox) request(id string) kintoneapi.Record {
	ps.t.Helper()
	r, err := ps.req.GetRecord(context.Background(), ps.sandbox.apps["request"].ID, id)
	require.NoError(ps.t, err)
	return r
}

func TestPollRequestsCycle(t *testing.T) {
	ps := newPollSandbox(t)
	net := ps.network("network-success.yaml")

	// --check reads the request app and writes nothing.
	r := ps.poll("--check")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "poll-requests check: ok networks=1 request_app=readable\n", r.stdout)

	// A FAILED run (invalid customers token), then a RERUN request: DONE, correlated.
	runID := ps.failedRun(net, "k1")
	id := ps.add(map[string]any{"request_type": "RERUN", "run_id": runID, "reason": "retry please"})
	bad := ps.add(map[string]any{"request_type": "STOP", "reason": "no run id"})
	gone := ps.add(map[string]any{"request_type": "RERUN", "run_id": runID, "reason": "withdrawn", "cancel_requested": []string{cancelOption}})
	stale := ps.add(map[string]any{"request_type": "RERUN", "run_id": runID, "reason": "dead poller", "request_state": "ACCEPTED",
		"claimed_at": "2026-01-01T00:00:00Z", "claim_heartbeat_at": "2026-01-01T00:00:00Z", "claimed_host": "dead"})

	r = ps.poll()
	require.Equal(t, 0, r.code, r.stderr)
	// requested counts the valid REQUESTED records (the RERUN and the withdrawn one), invalid
	// the invalid one, as the product counts.
	assert.Equal(t, "poll-requests: requested=2 claimed=1 completed=1 cancelled=1 invalid=1 stale=1 skipped=0\n", r.stdout, r.stderr)

	done := ps.request(id)
	assert.Equal(t, stateDone, done.Str("request_state"))
	assert.Equal(t, "OK", done.Str("result_code"))
	g := ps.graph(runID)
	require.Len(t, g.invocations, 2)
	inv := g.invocations[1].Str("invocation_id")
	assert.True(t, strings.HasSuffix(done.Str("result_message"), "invocation_id="+inv), done.Str("result_message"))
	assert.Equal(t, "app-request:"+id+":Administrator", g.invocations[1].Str("requested_by"))
	assert.NotEmpty(t, done.Str("claimed_at"))
	assert.Equal(t, "flownet-test-host", done.Str("claimed_host"))

	b := ps.request(bad)
	assert.Equal(t, stateRejected, b.Str("request_state"))
	assert.Equal(t, "REQUEST_INVALID", b.Str("result_code"))
	assert.Equal(t, "request validation failed: REQUIRED", b.Str("result_message"))
	c := ps.request(gone)
	assert.Equal(t, stateCancelled, c.Str("request_state"))
	assert.Equal(t, "CANCELLED_BY_REQUESTER", c.Str("result_code"))
	assert.Empty(t, c.Str("claimed_at"))
	st := ps.request(stale)
	assert.Equal(t, stateRejected, st.Str("request_state"))
	assert.Equal(t, "STALE", st.Str("result_code"))
	assert.Contains(t, st.Str("result_message"), "do not request another operation")

	// A RERUN of the SUCCESS run is refused before any child runs.
	again := ps.add(map[string]any{"request_type": "RERUN", "run_id": runID, "reason": "again"})
	unknown := ps.add(map[string]any{"request_type": "RERUN", "run_id": "netrun_nope", "reason": "who"})
	r = ps.poll()
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "RUN_STATUS_NOT_RERUNNABLE", ps.request(again).Str("result_code"))
	assert.Equal(t, "RUN_NOT_FOUND", ps.request(unknown).Str("result_code"))
	assert.Len(t, ps.graph(runID).invocations, 2)
}

func TestPollRequestsFailsClosedOnAnUnreadableRequestApp(t *testing.T) {
	ps := newPollSandbox(t)
	ps.environ = append(ps.environ, "KSQL_FLOWNET_REQUEST_API_TOKEN=KSQL_FLOW_TEST_invalid_request_token")
	for _, args := range [][]string{nil, {"--check"}} {
		r := ps.poll(args...)
		assert.Equal(t, 1, r.code)
		assert.Empty(t, r.stdout)
		assert.True(t, strings.HasPrefix(r.stderr, "Error ["+codeRequestAppUnreadable+"]: "), r.stderr)
		assert.NotContains(t, r.stderr, "KSQL_FLOW_TEST_invalid_request_token")
		assert.NotRegexp(t, `(CB|GAIA)_[A-Z]{2}\d{2}`, r.stderr)
	}
	r := ps.poll("--bogus")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Invalid poll-requests arguments:")
}

func TestClassifyRunChild(t *testing.T) {
	ok := func(stdout string) childResult { return childResult{stdout: stdout} }
	cases := []struct {
		name               string
		res                childResult
		start              bool
		state, code, inMsg string
	}{
		{"done", ok(`{"outcome":"RESUME","run_id":"r","invocation_id":"i","aggregate_status":"SUCCESS","invocation_result_code":"OK","retry_brake_node_ids":[],"blocked_run_ids":[]}`), false,
			stateDone, "OK", "aggregate=SUCCESS; invocation_id=i"},
		{"brake", ok(`{"outcome":"RESUME","run_id":"r","invocation_id":"i","aggregate_status":"FAILED","invocation_result_code":"NODE_FAILED_OR_BLOCKED","retry_brake_node_ids":["n1","n2"],"blocked_run_ids":[]}`), false,
			stateDone, "RETRY_BRAKE", "retry_brake_node_ids=n1,n2"},
		{"noop rerun", ok(`{"outcome":"NOOP","run_id":"r","invocation_id":null,"aggregate_status":"SUCCESS","invocation_result_code":"NOOP_ALREADY_SUCCESS"}`), false,
			stateDone, "NOOP_ALREADY_SUCCESS", "run_id=r"},
		{"exists start", ok(`{"outcome":"REJECTED","run_id":null,"invocation_id":null,"aggregate_status":null,"invocation_result_code":"RUN_ALREADY_EXISTS","blocked_run_ids":["r9"]}`), true,
			stateRejected, "RUN_ALREADY_EXISTS", "blocked_run_ids=r9"},
		{"max start", ok(`{"outcome":"REJECTED","invocation_result_code":"MAX_ACTIVE_RUNS","blocked_run_ids":["b","a"]}`), true,
			stateRejected, "MAX_ACTIVE_RUNS", "blocked_run_ids=a,b"},
		{"rejected rerun", childResult{stdout: `{"outcome":"REJECTED","invocation_result_code":"RUN_ON_HOLD"}`, stderr: "Error [RUN_ON_HOLD]: held\n", exit: 1}, false,
			stateRejected, "RUN_ON_HOLD", "Error [RUN_ON_HOLD]: held"},
		{"no json", childResult{stdout: "NEW: Run r finished", exit: 0}, false, stateRejected, "CHILD_RESULT_INVALID", "no result JSON"},
		{"new without invocation", ok(`{"outcome":"NEW","invocation_id":null,"invocation_result_code":"OK"}`), true, stateRejected, "CHILD_RESULT_INVALID", "not one the poller knows"},
		{"spawn", childResult{spawnErr: os.ErrNotExist}, true, stateRejected, "CHILD_SPAWN_FAILED", "could not be started"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state, code, msg := classifyRun(tc.res, tc.start)
			assert.Equal(t, tc.state, state)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, msg, tc.inMsg)
		})
	}
}

func TestReasonFileIsPrivate(t *testing.T) {
	path, err := writeReasonFile("stop: maintenance window")
	require.NoError(t, err)
	defer os.Remove(path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "stop: maintenance window", string(data))
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the poller's user may read a reason")
	}
}
