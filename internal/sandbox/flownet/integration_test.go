package flownet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v3/process"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/emulator"
)

// Integration tests: the sandbox FlowNet runs in-process (so several invocations with
// different environments share one test process) against the in-process kintone emulator,
// and starts the sandbox kSQL-Flow as a real child process from a flowsandbox binary built
// once per test run.

const testProfile = "sandbox"

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func flowsandboxBin(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "flownet-test-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "flowsandbox")
		if runtime.GOOS == "windows" {
			binPath += ".exe"
		}
		out, err := exec.Command("go", "build", "-o", binPath, "../../../cmd/flowsandbox").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("build flowsandbox: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

type sandbox struct {
	t        testing.TB
	srv      *emulator.Server
	apps     map[string]emulator.AppInfo
	admin    *kintoneapi.Client // full tokens: state, audit, log
	environ  []string
	childDir string
	fixtures string // a private copy of features/fixtures (networks + jobs)
}

func newSandbox(t testing.TB, latency map[string]time.Duration) *sandbox {
	t.Helper()
	bin := flowsandboxBin(t)
	srv, err := emulator.Start(context.Background(), emulator.Options{Latency: latency})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	s := &sandbox{t: t, srv: srv, apps: map[string]emulator.AppInfo{}, childDir: t.TempDir()}
	for _, a := range srv.Apps() {
		s.apps[a.Role] = a
	}
	hc, err := kintoneapi.HTTPClientWithCA(srv.CAFile())
	require.NoError(t, err)
	s.admin = kintoneapi.New(srv.BaseURL(), hc, map[string]string{
		s.apps["state"].ID: s.apps["state"].Tokens["full"],
		s.apps["audit"].ID: s.apps["audit"].Tokens["full"],
		s.apps["log"].ID:   s.apps["log"].Tokens["full"],
	})
	// The real kSQL-Flow 0.9.0 config format; the CA reaches kSQL-Flow through SSL_CERT_FILE.
	app := func(role, tokenVar string) map[string]any {
		id, err := strconv.ParseInt(s.apps[role].ID, 10, 64)
		require.NoError(t, err)
		return map[string]any{"id": id, "tokens": []string{"env:" + tokenVar}}
	}
	cfg := map[string]any{"profiles": map[string]any{testProfile: map[string]any{
		"baseUrl": srv.BaseURL(), "timezone": "Asia/Tokyo",
		"apps": map[string]any{
			"顧客管理":              app("customers", "TEST_CUSTOMERS_TOKEN"),
			"案件管理":              app("deals", "TEST_DEALS_TOKEN"),
			"KSQL_FLOW_JOB_LOG": app("log", "TEST_LOG_WRITE_TOKEN"),
		},
		"logApp": "KSQL_FLOW_JOB_LOG",
		"limits": map[string]any{"batchTimeoutSec": 120},
		"retry":  map[string]any{"maxAttempts": 1},
	}}}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	cfgPath := filepath.Join(t.TempDir(), "ksql-flow.json")
	require.NoError(t, os.WriteFile(cfgPath, b, 0o600))

	s.fixtures = t.TempDir()
	for _, sub := range []string{"networks", "jobs"} {
		copyDir(t, filepath.Join("..", "..", "..", "features", "fixtures", sub), filepath.Join(s.fixtures, sub))
	}
	s.environ = []string{
		"PATH=" + os.Getenv("PATH"),
		"SSL_CERT_FILE=" + srv.CAFile(),
		"KSQL_FLOWNET_PROFILE=" + testProfile,
		"KSQL_FLOWNET_BASE_URL=" + srv.BaseURL(),
		"KSQL_FLOWNET_STATE_APP_ID=" + s.apps["state"].ID,
		"KSQL_FLOWNET_STATE_API_TOKEN=" + s.apps["state"].Tokens["flownet"],
		"KSQL_FLOWNET_AUDIT_APP_ID=" + s.apps["audit"].ID,
		"KSQL_FLOWNET_AUDIT_API_TOKEN=" + s.apps["audit"].Tokens["flownet"],
		"KSQL_FLOW_LOG_APP_ID=" + s.apps["log"].ID,
		"KSQL_FLOW_LOG_API_TOKEN=" + s.apps["log"].Tokens["read"],
		"KSQL_FLOW_BIN=" + bin,
		"KSQL_FLOW_BIN_ARGS=ksql-flow",
		"KSQL_FLOW_CONFIG=" + cfgPath,
		"KSQL_FLOW_WORKDIR=" + filepath.Join(t.TempDir(), "work"),
		"KSQL_FLOWNET_REQUESTED_BY=flownet-test",
		"KSQL_FLOWNET_HOST=flownet-test-host",
		"TEST_CUSTOMERS_TOKEN=" + s.apps["customers"].Tokens["read"],
		"TEST_DEALS_TOKEN=" + s.apps["deals"].Tokens["read"],
		"TEST_LOG_WRITE_TOKEN=" + s.apps["log"].Tokens["ksqlflow"],
	}
	return s
}

func copyDir(t testing.TB, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(to, 0o755))
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), b, 0o644))
	}
}

func (s *sandbox) network(name string) string { return filepath.Join(s.fixtures, "networks", name) }

type cmdResult struct {
	code           int
	stdout, stderr string
}

// flownet runs one FlowNet command in-process.
func (s *sandbox) flownet(args ...string) cmdResult {
	var out, errb bytes.Buffer
	c := newCLI(s.environ, &out, &errb)
	c.childDir, c.retryEvery = s.childDir, 50*time.Millisecond
	code := c.dispatch(args)
	return cmdResult{code, out.String(), errb.String()}
}

func (s *sandbox) all(app string, cond string) []kintoneapi.Record {
	s.t.Helper()
	recs, err := s.admin.GetAll(context.Background(), s.apps[app].ID, cond, nil)
	require.NoError(s.t, err)
	return recs
}

// graph is the records of one Run, read through kintone as the step definitions do.
type graph struct {
	run         kintoneapi.Record
	states      map[string]kintoneapi.Record
	attempts    map[string][]kintoneapi.Record // by node, attempt_no ascending
	invocations []kintoneapi.Record            // $id ascending
}

func (s *sandbox) graph(runID string) graph {
	s.t.Helper()
	// run_id in is a token match on kintone: keep the exact matches, as the steps do.
	ofRun := func(app, recordType string) []kintoneapi.Record {
		return kintoneapi.Where(s.all(app, `record_type in ("`+recordType+`") and run_id in (`+q(runID)+`)`), "run_id", runID)
	}
	runs := ofRun("state", "NETWORK_RUN")
	require.Len(s.t, runs, 1, "exactly one NETWORK_RUN for %s", runID)
	g := graph{run: runs[0], states: map[string]kintoneapi.Record{}, attempts: map[string][]kintoneapi.Record{}}
	for _, r := range ofRun("state", "NODE_STATE") {
		g.states[r.Str("node_id")] = r
	}
	for _, r := range ofRun("audit", "NODE_ATTEMPT") {
		g.attempts[r.Str("node_id")] = append(g.attempts[r.Str("node_id")], r)
	}
	for _, list := range g.attempts {
		sort.Slice(list, func(i, j int) bool { return atoi(list[i].Str("attempt_no")) < atoi(list[j].Str("attempt_no")) })
	}
	g.invocations = ofRun("audit", "RUN_INVOCATION")
	return g
}

func runIDOf(t testing.TB, stdout string) string {
	t.Helper()
	for _, f := range strings.Fields(stdout) {
		if strings.HasPrefix(f, "netrun_") {
			return f
		}
	}
	t.Fatalf("no run id in %q", stdout)
	return ""
}

func decodeRunJSON(t *testing.T, stdout string) runOutput {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 1, "--json prints exactly one line: %q", stdout)
	var o runOutput
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &o))
	return o
}

// revisions maps "<app>/<$id>" to $revision for every record of the state and audit apps.
func (s *sandbox) revisions() map[string]string {
	out := map[string]string{}
	for _, app := range []string{"state", "audit"} {
		for _, r := range s.all(app, "") {
			out[app+"/"+r.ID()] = r.Revision()
		}
	}
	return out
}

func (s *sandbox) runningLocks() []kintoneapi.Record {
	return s.all("state", `record_type in ("NETWORK_LOCK") and status in ("RUNNING")`)
}

func TestSerialSuccessThenNoop(t *testing.T) {
	s := newSandbox(t, nil)
	r := s.flownet("run-network", s.network("network-success.yaml"), "--business-key", "k1")
	require.Equal(t, 0, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
	assert.Regexp(t, `^NEW: Run netrun_[0-9a-f-]{36} finished with aggregate SUCCESS \(OK\)\.\n$`, r.stdout)
	runID := runIDOf(t, r.stdout)

	g := s.graph(runID)
	assert.Equal(t, "SUCCESS", g.run.Str("status"))
	assert.Equal(t, "ACTIVE", g.run.Str("lifecycle_status"))
	assert.Equal(t, "true", g.run.Str("resume_allowed"))
	r1, _ := R1Key(testProfile, "m5_success", "k1")
	assert.Equal(t, r1, g.run.Str("record_key"))
	assert.NotEmpty(t, g.run.Str("finished_at"))
	order := []string{"n1_extract", "n2_aggregate", "n3_finalize"}
	var prevFinished time.Time
	for _, id := range order {
		st := g.states[id]
		require.NotNil(t, st, id)
		assert.Equal(t, "SUCCESS", st.Str("status"), id)
		assert.Equal(t, "1", st.Str("latest_attempt_no"), id)
		s1, _ := S1Key(runID, id)
		assert.Equal(t, "STATE:"+s1, st.Str("record_key"))
		assert.Equal(t, st.Revision(), st.Str("revision"), "business revision tracks $revision")
		require.Len(t, g.attempts[id], 1, id)
		a := g.attempts[id][0]
		assert.Equal(t, "SUCCESS", a.Str("status"), id)
		assert.Equal(t, "OK", a.Str("result_code"), id)
		assert.NotEmpty(t, a.Str("execution_id"))
		assert.NotEmpty(t, a.Str("runner_execution_started_at"))
		started, ok := parseTime(a.Str("execution_started_at"))
		require.True(t, ok)
		assert.False(t, started.Before(prevFinished), "%s started before the previous node finished", id)
		prevFinished, _ = parseTime(a.Str("finished_at"))
	}
	require.Len(t, g.invocations, 1)
	inv := g.invocations[0]
	assert.Equal(t, []string{"NEW", "SUCCESS", "OK"}, []string{inv.Str("mode"), inv.Str("status"), inv.Str("result_code")})
	assert.Equal(t, `["n1_extract","n2_aggregate","n3_finalize"]`, inv.Str("selected_node_ids"))
	assert.Equal(t, "flownet-test", inv.Str("requested_by"))

	// JOB log correlation: one row per attempt with the same ids.
	logs := s.all("log", `correlation_id = "`+runID+`"`)
	require.Len(t, logs, 3)
	for _, id := range order {
		a := g.attempts[id][0]
		found := false
		for _, l := range logs {
			if l.Str("attempt_id") == a.Str("node_attempt_id") {
				found = true
				assert.Equal(t, a.Str("job_id"), l.Str("job_id"))
				assert.Equal(t, a.Str("execution_id"), l.Str("execution_id"))
				assert.Equal(t, "SUCCESS", l.Str("status"))
			}
		}
		assert.True(t, found, "JOB log row for %s", id)
	}

	// The lock was released into its tombstone.
	assert.Empty(t, s.runningLocks())
	tombs := s.all("state", `record_type in ("NETWORK_LOCK")`)
	require.Len(t, tombs, 1)
	assert.True(t, strings.HasPrefix(tombs[0].Str("record_key"), "LOCKDONE:"))
	assert.Equal(t, []string{"SUCCESS", "OK", "", ""}, []string{tombs[0].Str("status"), tombs[0].Str("status_reason"), tombs[0].Str("lock_key"), tombs[0].Str("lease_token")})

	// Same key again: NO-OP, nothing executed, exit 0.
	r = s.flownet("run-network", s.network("network-success.yaml"), "--business-key", "k1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "NO-OP: Run "+runID+" is already SUCCESS; nothing was executed.\n", r.stdout)
	r = s.flownet("run-network", s.network("network-success.yaml"), "--business-key", "k1", "--resume", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	o := decodeRunJSON(t, r.stdout)
	assert.Equal(t, "NOOP", o.Outcome)
	assert.Equal(t, "NOOP_ALREADY_SUCCESS", o.InvocationResultCode)
	assert.Nil(t, o.InvocationID)
	assert.Len(t, s.graph(runID).invocations, 1, "NOOP creates no Invocation")
	assert.Len(t, s.all("state", `record_type in ("NETWORK_LOCK") and status in ("SUCCESS")`), 3)

	// --rerun-from on a SUCCESS Run is refused.
	r = s.flownet("run-network", s.network("network-success.yaml"), "--business-key", "k1", "--resume", "--rerun-from", "n2_aggregate")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [RERUN_FROM_SUCCESS_RUN]: ")
}

func TestMidFailureResumeBundleAndRetryBrake(t *testing.T) {
	s := newSandbox(t, nil)
	net := s.network("network-midfail.yaml")
	r := s.flownet("run-network", net, "--business-key", "mf")
	require.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "aggregate FAILED (NODE_FAILED_OR_BLOCKED).")
	runID := runIDOf(t, r.stdout)
	g := s.graph(runID)
	assert.Equal(t, "FAILED", g.run.Str("status"))
	assert.Equal(t, "SUCCESS", g.states["n1_extract"].Str("status"))
	assert.Equal(t, []string{"FAILED", "ASSERT_FAILED"}, []string{g.states["n2_fail"].Str("status"), g.states["n2_fail"].Str("status_reason")})
	assert.Equal(t, "BLOCKED", g.states["n3_finalize"].Str("status"))
	assert.Equal(t, `["n2_fail"]`, g.states["n3_finalize"].Str("blocked_by"))
	assert.Equal(t, "ALL_SUCCESS_NOT_SATISFIED", g.states["n3_finalize"].Str("status_reason"))
	require.Len(t, g.attempts["n2_fail"], 1)
	assert.Equal(t, []string{"FAILED", "ASSERT_FAILED"}, []string{g.attempts["n2_fail"][0].Str("status"), g.attempts["n2_fail"][0].Str("result_code")})
	assert.NotEmpty(t, g.attempts["n2_fail"][0].Str("error_message"))
	assert.Equal(t, "FAILED", g.invocations[0].Str("status"))

	// Without --resume the unfinished Run blocks a second NEW.
	r = s.flownet("run-network", net, "--business-key", "mf", "--json")
	assert.Equal(t, 1, r.code)
	o := decodeRunJSON(t, r.stdout)
	assert.Equal(t, "REJECTED", o.Outcome)
	assert.Equal(t, "RUN_ALREADY_EXISTS", o.InvocationResultCode)
	assert.Equal(t, []string{runID}, o.BlockedRunIDs)
	assert.Contains(t, r.stderr, "Blocking run_id(s): "+runID)
	assert.Len(t, s.graph(runID).invocations, 1)

	// Editing the working copy must not change what a resume executes (the bundle does).
	sqlPath := filepath.Join(s.fixtures, "jobs", "assert-fail.sql")
	b, err := os.ReadFile(sqlPath)
	require.NoError(t, err)
	fixed := strings.Replace(string(b), "ASSERT (SELECT 1) = 0", "ASSERT (SELECT 1) = 1", 1)
	require.NotEqual(t, string(b), fixed, "fixture shape changed")
	require.NoError(t, os.WriteFile(sqlPath, []byte(fixed), 0o644))

	r = s.flownet("run-network", net, "--business-key", "mf", "--resume")
	require.Equal(t, 1, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "RESUME: Run "+runID+" "), r.stdout)
	g = s.graph(runID)
	assert.Len(t, g.attempts["n1_extract"], 1, "SUCCESS node preserved")
	require.Len(t, g.attempts["n2_fail"], 2)
	assert.Equal(t, "2", g.attempts["n2_fail"][1].Str("attempt_no"))
	assert.Equal(t, "ASSERT_FAILED", g.attempts["n2_fail"][1].Str("result_code"), "the resume ran the bundled SQL")
	assert.Equal(t, "BLOCKED", g.states["n3_finalize"].Str("status"))
	require.Len(t, g.invocations, 2)
	assert.NotEqual(t, g.invocations[0].Str("invocation_id"), g.invocations[1].Str("invocation_id"))
	assert.Equal(t, "RESUME", g.invocations[1].Str("mode"))
	assert.Equal(t, `["n1_extract"]`, g.invocations[1].Str("preserved_node_ids"))
	// The close rewrites the sets from what the scheduler did (invsets.go): n2_fail was
	// started, n3_finalize BLOCKED behind it.
	assert.Equal(t, `["n2_fail"]`, g.invocations[1].Str("selected_node_ids"))
	assert.Equal(t, `["n3_finalize"]`, g.invocations[1].Str("blocked_node_ids"))

	// Third attempt, then the retry brake holds n2_fail back.
	r = s.flownet("run-network", net, "--resume-run", runID)
	require.Equal(t, 1, r.code, r.stderr)
	r = s.flownet("run-network", net, "--resume-run", runID, "--json")
	require.Equal(t, 1, r.code, r.stderr)
	o = decodeRunJSON(t, r.stdout)
	assert.Equal(t, "RESUME", o.Outcome)
	assert.Equal(t, []string{"n2_fail"}, o.RetryBrakeNodeIDs)
	assert.Equal(t, "FAILED", *o.AggregateStatus)
	g = s.graph(runID)
	assert.Len(t, g.attempts["n2_fail"], 3, "the brake stops a fourth automatic attempt")
	assert.Equal(t, "RETRY_BRAKE:ASSERT_FAILEDx3", g.states["n2_fail"].Str("status_reason"))
	assert.Equal(t, "resume incomplete run; RETRY_BRAKE:ASSERT_FAILEDx3", g.invocations[3].Str("reason"))
	assert.Equal(t, `[]`, g.invocations[3].Str("selected_node_ids"), "nothing was started")
	assert.Equal(t, `["n2_fail","n3_finalize"]`, g.invocations[3].Str("blocked_node_ids"))

	// An explicit --rerun-from releases the brake (and now runs the bundled SQL again).
	r = s.flownet("run-network", net, "--resume-run", runID, "--rerun-from", "n2_fail", "--json")
	require.Equal(t, 1, r.code, r.stderr)
	o = decodeRunJSON(t, r.stdout)
	assert.Empty(t, o.RetryBrakeNodeIDs)
	g = s.graph(runID)
	assert.Len(t, g.attempts["n2_fail"], 4)
	assert.Equal(t, "RERUN_FROM", g.invocations[4].Str("mode"))
	assert.Equal(t, `["n2_fail","n3_finalize"]`, g.invocations[4].Str("selected_node_ids"), "a --rerun-from keeps its selection")
	assert.Empty(t, s.runningLocks())
}

func TestHeldJobLockDefersNodeAndIndependentBranchContinues(t *testing.T) {
	s := newSandbox(t, nil)
	// A standalone kSQL-Flow holding job m5_shared_read: its RUNNING JOB-log lock record.
	holdID, holdRev, err := s.admin.AddRecord(context.Background(), s.apps["log"].ID, kintoneapi.Values(map[string]any{
		"record_type": "JOB", "status": "RUNNING", "job_key": testProfile + ":m5_shared_read", "job_id": "m5_shared_read",
		"batch_id": "holder", "profile": testProfile,
	}))
	require.NoError(t, err)

	r := s.flownet("run-network", s.network("network-diamond.yaml"), "--business-key", "lc", "--json")
	require.Equal(t, 1, r.code, r.stderr)
	o := decodeRunJSON(t, r.stdout)
	assert.Equal(t, "NEW", o.Outcome)
	assert.Equal(t, "NODES_DEFERRED", o.InvocationResultCode)
	assert.Equal(t, "RUNNING", *o.AggregateStatus)
	g := s.graph(*o.RunID)
	n1 := g.states["n1_customers"]
	assert.Equal(t, []string{"WAITING", "PREPARE_FAILED", "1"}, []string{n1.Str("status"), n1.Str("status_reason"), n1.Str("latest_attempt_no")})
	assert.Empty(t, n1.Str("started_at"))
	require.Len(t, g.attempts["n1_customers"], 1)
	assert.Equal(t, []string{"CANCELLED", "PREPARE_FAILED"}, []string{g.attempts["n1_customers"][0].Str("status"), g.attempts["n1_customers"][0].Str("result_code")})
	assert.Equal(t, "SUCCESS", g.states["n2_deals"].Str("status"))
	assert.Equal(t, "SUCCESS", g.attempts["n2_deals"][0].Str("status"))
	assert.Equal(t, "WAITING", g.states["n3_join"].Str("status"))
	assert.Empty(t, g.attempts["n3_join"])
	assert.Equal(t, "RUNNING", g.run.Str("status"))
	assert.Equal(t, []string{"CANCELLED", "NODES_DEFERRED"}, []string{g.invocations[0].Str("status"), g.invocations[0].Str("result_code")})

	// The holder finishes; a resume completes the Run with attempt 2 for n1.
	_, err = s.admin.UpdateRecord(context.Background(), s.apps["log"].ID, holdID, kintoneapi.Values(map[string]any{
		"status": "SUCCESS", "job_key": "", "job_key_done": testProfile + ":m5_shared_read"}), holdRev)
	require.NoError(t, err)
	r = s.flownet("run-network", s.network("network-diamond.yaml"), "--business-key", "lc", "--resume")
	require.Equal(t, 0, r.code, r.stderr)
	g = s.graph(*o.RunID)
	assert.Equal(t, "SUCCESS", g.run.Str("status"))
	require.Len(t, g.attempts["n1_customers"], 2)
	assert.Equal(t, "2", g.attempts["n1_customers"][1].Str("attempt_no"))
	assert.Len(t, g.attempts["n2_deals"], 1)
}

// killByAttempt kills the kSQL-Flow process whose command line carries --attempt-id id.
func killByAttempt(t *testing.T, attemptID string) {
	t.Helper()
	procs, err := process.Processes()
	require.NoError(t, err)
	var victims []*process.Process
	for _, p := range procs {
		args, err := p.CmdlineSlice()
		if err != nil {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "--attempt-id" && args[i+1] == attemptID {
				victims = append(victims, p)
			}
		}
	}
	require.Len(t, victims, 1, "exactly one kSQL-Flow child for %s", attemptID)
	require.NoError(t, victims[0].Kill())
}

// waitFor polls cond until it returns true or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, seen := cond()
		if ok {
			return
		}
		last = seen
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKilledChildAfterStartMarkerIsUnknownAndStatusIsReadOnly(t *testing.T) {
	// 300 ms per business-app request makes n1_longread run for seconds (≈20 requests).
	s := newSandbox(t, map[string]time.Duration{"customers": 300 * time.Millisecond, "deals": 300 * time.Millisecond})
	done := make(chan cmdResult, 1)
	go func() { done <- s.flownet("run-network", s.network("network-drill.yaml"), "--business-key", "kill") }()

	var attemptID string
	waitFor(t, "the JOB-log start marker of m6_longread", 30*time.Second, func() (bool, string) {
		rows, err := s.admin.GetRecords(context.Background(), s.apps["log"].ID, `job_id = "m6_longread" and status in ("RUNNING")`, nil)
		if err != nil || len(rows) == 0 {
			return false, fmt.Sprint(err)
		}
		attemptID = rows[0].Str("attempt_id")
		return rows[0].Str("runner_execution_started_at") != "" && attemptID != "", rows[0].Str("runner_execution_started_at")
	})

	// While the node runs: status shows a live lock and a LIVE Run, and reads nothing else.
	runs := s.all("state", `record_type in ("NETWORK_RUN")`)
	require.Len(t, runs, 1)
	runID := runs[0].Str("run_id")
	// The running FlowNet's heartbeats move its lock's revision (every 3 s on the drill);
	// every other record must stay as it was.
	withoutLocks := func(revs map[string]string) map[string]string {
		for _, l := range s.all("state", `record_type in ("NETWORK_LOCK")`) {
			delete(revs, "state/"+l.ID())
		}
		return revs
	}
	before := withoutLocks(s.revisions())
	st := s.flownet("status", "m6_drill", "--profile", testProfile, "--run-id", runID, "--json")
	require.Equal(t, 0, st.code, st.stderr)
	assert.NotContains(t, st.stdout, "lease_token")
	var doc statusDoc
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &doc))
	require.NotNil(t, doc.Lock)
	assert.False(t, doc.Lock.StaleCandidate)
	require.Len(t, doc.Runs, 1)
	assert.Equal(t, "LIVE", doc.Runs[0].Activity)
	require.NotNil(t, doc.Runs[0].RecoveryIdentifiers.ForceUnlockNetwork)
	assert.Equal(t, doc.Lock.OwnerInvocationID, doc.Runs[0].RecoveryIdentifiers.ForceUnlockNetwork.ExpectedOwnerInvocationID)
	assert.True(t, strings.HasPrefix(*doc.Lock.OwnerInstanceID, "local-pid://flownet-test-host/"))
	assert.Equal(t, before, withoutLocks(s.revisions()), "status must not change any record")

	killByAttempt(t, attemptID)
	var r cmdResult
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("FlowNet did not finish after the kSQL-Flow child was killed")
	}
	require.Equal(t, 1, r.code, "stdout %s stderr %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "aggregate UNKNOWN (NODE_RESULT_UNKNOWN).")
	g := s.graph(runID)
	assert.Equal(t, "UNKNOWN", g.run.Str("status"))
	assert.Equal(t, "UNKNOWN", g.states["n1_longread"].Str("status"))
	a := g.attempts["n1_longread"][0]
	assert.Equal(t, []string{"UNKNOWN", "NO_EXECUTION_RESULT"}, []string{a.Str("status"), a.Str("result_code")})
	assert.NotEmpty(t, a.Str("runner_execution_started_at"))
	assert.Equal(t, "SUCCESS", g.states["n2_independent"].Str("status"))
	assert.Equal(t, "BLOCKED", g.states["n3_join"].Str("status"))
	assert.Equal(t, `["n1_longread"]`, g.states["n3_join"].Str("blocked_by"))
	assert.Equal(t, "UNKNOWN", g.invocations[0].Str("status"))
	assert.Equal(t, "NODE_RESULT_UNKNOWN", g.invocations[0].Str("result_code"))

	// Status after the fact: text and JSON, detail and list, all read-only.
	before = s.revisions()
	txt := s.flownet("status", "m6_drill", "--profile", testProfile, "--run-id", runID)
	require.Equal(t, 0, txt.code, txt.stderr)
	assert.Contains(t, txt.stdout, "Network: m6_drill")
	assert.Contains(t, txt.stdout, "run_id: "+runID)
	st = s.flownet("status", "m6_drill", "--profile", testProfile, "--business-key", "kill", "--json")
	require.Equal(t, 0, st.code, st.stderr)
	list := s.flownet("status", "m6_drill", "--profile", testProfile, "--json")
	require.Equal(t, 0, list.code, list.stderr)
	assert.Equal(t, before, s.revisions(), "status must not change any record")

	doc = statusDoc{}
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &doc))
	assert.Nil(t, doc.Lock)
	ri := doc.Runs[0].RecoveryIdentifiers
	assert.Equal(t, []runNodeRef{{runID, "n1_longread"}}, ri.ResolveNode)
	assert.Nil(t, ri.ForceUnlockNetwork)
	assert.Equal(t, "", doc.Runs[0].Activity, "terminal Runs have no activity")
	require.NotNil(t, ri.RunNetwork.ResumeRun)
	assert.Equal(t, runID, *ri.RunNetwork.ResumeRun)
	assert.Len(t, doc.Runs[0].Invocations, 1)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(list.stdout), &raw))
	runsJSON := raw["runs"].([]any)
	require.Len(t, runsJSON, 1)
	assert.NotContains(t, runsJSON[0], "node_states", "list mode has no detail")
	assert.Contains(t, runsJSON[0], "hold")

	nf := s.flownet("status", "m6_drill", "--profile", testProfile, "--run-id", "netrun_missing")
	assert.Equal(t, 1, nf.code)
	assert.True(t, strings.HasPrefix(nf.stderr, "Error [RECORD_NOT_FOUND]: "), nf.stderr)
}

func TestRunNetworkRejections(t *testing.T) {
	s := newSandbox(t, nil)
	net := s.network("network-success.yaml")

	r := s.flownet("run-network", net, "--resume-run", "netrun_x", "--business-key", "k", "--json")
	assert.Equal(t, 1, r.code)
	o := decodeRunJSON(t, r.stdout)
	assert.Equal(t, []string{"REJECTED", "INVALID_ARGUMENTS"}, []string{o.Outcome, o.InvocationResultCode})
	assert.Contains(t, r.stderr, "Invalid run-network arguments:\n- --resume-run cannot be combined")

	r = s.flownet("run-network", net, "--resume-run", "netrun_x", "--json")
	assert.Equal(t, 1, r.code)
	o = decodeRunJSON(t, r.stdout)
	assert.Equal(t, "RUN_NOT_FOUND", o.InvocationResultCode)
	assert.Equal(t, "netrun_x", *o.RunID)
	assert.Empty(t, s.runningLocks(), "a rejection releases the lock")

	// Capabilities are checked before the lock: a broken kSQL-Flow writes no lock record.
	locksBefore := len(s.all("state", `record_type in ("NETWORK_LOCK")`))
	r = s.flownet("run-network", net, "--business-key", "k", "--ksql-flow-bin", filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [KSQL_FLOW_PROCESS_FAILED]: ")
	assert.Len(t, s.all("state", `record_type in ("NETWORK_LOCK")`), locksBefore)

	// A RUNNING lock of someone else — even long expired — is never taken over.
	n1, _ := N1Key(testProfile, "m5_success")
	_, _, err := s.admin.AddRecord(context.Background(), s.apps["state"].ID, kintoneapi.Values(map[string]any{
		"record_key": "LOCK:" + n1, "record_type": "NETWORK_LOCK", "lock_key": n1, "profile": testProfile,
		"owner_invocation_id": "invoke_other", "lease_token": "tok", "status": "RUNNING", "revision": 1,
		"heartbeat_at": "2020-01-01T00:00:00Z", "lease_expires_at": "2020-01-01T00:01:00Z", "status_reason": "owner_instance_id=local-pid://h/1",
	}))
	require.NoError(t, err)
	r = s.flownet("run-network", net, "--business-key", "k", "--json")
	assert.Equal(t, 1, r.code)
	o = decodeRunJSON(t, r.stdout)
	assert.Equal(t, "LOCK_CONFLICT", o.InvocationResultCode)
	assert.Contains(t, r.stderr, "Error [LOCK_CONFLICT]: ")
	assert.Empty(t, s.all("state", `record_type in ("NETWORK_RUN")`))
	st := s.flownet("status", "m5_success", "--profile", testProfile, "--json")
	require.Equal(t, 0, st.code, st.stderr)
	var doc statusDoc
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &doc))
	require.NotNil(t, doc.Lock)
	assert.True(t, doc.Lock.StaleCandidate)
	assert.Equal(t, "local-pid://h/1", *doc.Lock.OwnerInstanceID)

	// Validation failure.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("schema_version: 2\n"), 0o644))
	r = s.flownet("run-network", bad, "--business-key", "k")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [NETWORK_VALIDATION_FAILED]: Network validation failed with ")
	r = s.flownet("validate", bad)
	assert.Equal(t, 1, r.code)
	assert.Regexp(t, `^Network validation failed with \d+ error\(s\):\n- \[`, r.stderr)
	r = s.flownet("validate", net)
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "Valid network definition: "+net+"\n", r.stdout)
	r = s.flownet("frobnicate")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "Error: unknown command 'frobnicate'.", strings.SplitN(r.stderr, "\n", 2)[0])
}

var _ = io.Discard

func TestResumeAdjudicatesOrphanOfKilledFlowNet(t *testing.T) {
	s := newSandbox(t, map[string]time.Duration{"customers": 50 * time.Millisecond, "deals": 50 * time.Millisecond})
	net := s.network("network-drill.yaml")
	// FlowNet as a real process this time, so that it can be killed while its kSQL-Flow
	// child keeps running (the child is orphaned and finishes on its own).
	cmd := exec.Command(flowsandboxBin(t), "flownet", "run-network", net, "--business-key", "orphan")
	cmd.Env, cmd.Dir = s.environ, s.childDir
	outPath := filepath.Join(t.TempDir(), "flownet.out")
	outFile, err := os.Create(outPath)
	require.NoError(t, err)
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	var attemptID string
	waitFor(t, "the JOB-log start marker of m6_longread", 30*time.Second, func() (bool, string) {
		rows, err := s.admin.GetRecords(context.Background(), s.apps["log"].ID, `job_id = "m6_longread"`, nil)
		if err != nil || len(rows) == 0 {
			b, _ := os.ReadFile(outPath)
			return false, fmt.Sprint(err, string(b))
		}
		attemptID = rows[0].Str("attempt_id")
		return rows[0].Str("runner_execution_started_at") != "", rows[0].Str("status")
	})
	require.NoError(t, cmd.Process.Kill())
	<-exited
	waitFor(t, "the orphaned kSQL-Flow child to finish", 60*time.Second, func() (bool, string) {
		rows, err := s.admin.GetRecords(context.Background(), s.apps["log"].ID, `attempt_id = "`+attemptID+`"`, nil)
		if err != nil || len(rows) != 1 {
			return false, fmt.Sprint(err, len(rows))
		}
		return rows[0].Str("status") == "SUCCESS", rows[0].Str("status")
	})
	runID := s.all("state", `record_type in ("NETWORK_RUN")`)[0].Str("run_id")

	// The dead owner's lock is still RUNNING and is never taken over.
	r := s.flownet("run-network", net, "--resume-run", runID)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [LOCK_CONFLICT]: ")
	locks := s.runningLocks()
	require.Len(t, locks, 1)
	// Stand-in for force-unlock-network, which would wait out the lease plus the 60 s
	// DATETIME allowance (operators_test covers it): the test releases the lock directly.
	_, err = s.admin.UpdateRecord(context.Background(), s.apps["state"].ID, locks[0].ID(), kintoneapi.Values(map[string]any{
		"record_key": "LOCKDONE:test-force-release", "lock_key": "", "owner_invocation_id": "", "lease_token": "",
		"status": "CANCELLED", "status_reason": "NETWORK_LOCK_FORCE_RELEASED"}), locks[0].Revision())
	require.NoError(t, err)

	r = s.flownet("run-network", net, "--resume-run", runID)
	require.Equal(t, 0, r.code, "stdout %s stderr %s", r.stdout, r.stderr)
	g := s.graph(runID)
	assert.Equal(t, "SUCCESS", g.run.Str("status"))
	require.Len(t, g.attempts["n1_longread"], 1, "the orphan's result is adopted, not re-run")
	a := g.attempts["n1_longread"][0]
	assert.Equal(t, []string{"SUCCESS", "OK"}, []string{a.Str("status"), a.Str("result_code")})
	assert.NotEmpty(t, a.Str("execution_id"))
	assert.Equal(t, "SUCCESS", g.states["n3_join"].Str("status"))
	require.Len(t, g.invocations, 2)
	assert.Equal(t, []string{"CANCELLED", "NETWORK_LEASE_INTERRUPTED"}, []string{g.invocations[0].Str("status"), g.invocations[0].Str("result_code")})
	assert.Equal(t, "resume incomplete run; orphan attempts adjudicated: "+a.Str("node_attempt_id")+"=SUCCESS(OK)", g.invocations[1].Str("reason"))
	assert.Equal(t, "new business run; finalized as an abandoned invocation during reconciliation", g.invocations[0].Str("reason"))
	ops := s.all("audit", `record_type in ("OPERATION_AUDIT") and run_id in ("`+runID+`")`)
	require.Len(t, ops, 1)
	assert.Equal(t, "INVOCATION_FINALIZED", ops[0].Str("result_code"))
	assert.Contains(t, ops[0].Str("reason"), `"event_type":"RECONCILIATION_REPAIR"`)
}
