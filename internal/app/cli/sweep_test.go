//go:build unix

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/app/rehearse"
	"github.com/ksqlflow/flowtest/internal/app/sweep"
	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/runlock"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/harness/workdir"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// standaloneTenant is a kintone emulator started as a live tenant (its operator env), with a
// client holding every app's full token for planting records.
type standaloneTenant struct {
	env    []string // for a flowtest child: PATH, HOME, TMPDIR, the writable tokens
	envDir string   // holds .env
	api    *kintoneapi.Client
	apps   map[string]string // role -> app id
	tokens []string
	pid    int // the emulator's
}

func startStandaloneTenant(t *testing.T) *standaloneTenant {
	t.Helper()
	dir := t.TempDir()
	envDir := filepath.Join(dir, "env")
	cmd := exec.Command(filepath.Join(binDir, "flowsandbox"), "kintone", "serve", "--exit-on-stdin-eof", "--operator-env", envDir)
	cmd.Dir = dir
	cmd.Env = baseEnv(dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() }) // end of its stdin ends it
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	var info struct {
		BaseURL string `json:"base_url"`
		CAFile  string `json:"ca_file"`
		Apps    []struct {
			Role   string
			ID     string
			Tokens map[string]string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(line), &info))
	st := &standaloneTenant{envDir: envDir, apps: map[string]string{}, pid: cmd.Process.Pid}
	full := map[string]string{}
	for _, a := range info.Apps {
		st.apps[a.Role] = a.ID
		full[a.ID] = a.Tokens["full"]
		for _, tok := range a.Tokens {
			st.tokens = append(st.tokens, tok)
		}
	}
	hc, err := kintoneapi.HTTPClientWithCA(info.CAFile)
	require.NoError(t, err)
	st.api = kintoneapi.New(info.BaseURL, hc, full)
	exports, err := rehearse.ParseExports(filepath.Join(envDir, "tokens.sh"))
	require.NoError(t, err)
	st.env = append(baseEnv(t.TempDir()), exports...)
	return st
}

func (st *standaloneTenant) tmpDir() string {
	for _, kv := range st.env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			return v
		}
	}
	return ""
}

func (st *standaloneTenant) add(t *testing.T, role string, kv map[string]any) {
	t.Helper()
	_, _, err := st.api.AddRecord(context.Background(), st.apps[role], kintoneapi.Values(kv))
	require.NoError(t, err, "plant a %s record", role)
}

func (st *standaloneTenant) count(t *testing.T, role, cond string) int {
	t.Helper()
	n, err := st.api.Count(context.Background(), st.apps[role], cond)
	require.NoError(t, err)
	return n
}

func dt(t time.Time) string { return t.UTC().Truncate(time.Minute).Format(time.RFC3339) }

// plantRun writes what a run of scope sc left in the state (and audit) app: its NETWORK_RUN,
// a NODE_STATE and, when lease is non-zero, a held NETWORK_LOCK with that lease end.
func plantRun(t *testing.T, st *standaloneTenant, sc *scope.Scope, lease time.Time) {
	t.Helper()
	run := "netrun_" + sc.Hash8()
	net := sc.ID() + "_net"
	st.add(t, "state", map[string]any{"record_key": "RUN:" + run, "record_type": "NETWORK_RUN", "run_id": run,
		"network_id": net, "business_key": sc.ID(), "status": "RUNNING"})
	st.add(t, "state", map[string]any{"record_key": "NS:" + run, "record_type": "NODE_STATE", "run_id": run,
		"node_state_key": run + ":n1", "node_id": sc.ID() + "_n1", "status": "RUNNING"})
	st.add(t, "audit", map[string]any{"record_key": "INV:" + run, "record_type": "RUN_INVOCATION", "run_id": run,
		"invocation_id": "inv_" + sc.Hash8(), "status": "RUNNING"})
	if !lease.IsZero() {
		key := kintoneguard.N1Key("e2e", net)
		st.add(t, "state", map[string]any{"record_key": "LOCK:" + key, "record_type": "NETWORK_LOCK", "lock_key": key,
			"profile": "e2e", "owner_invocation_id": "inv_" + sc.Hash8(), "lease_token": "lt_" + sc.Hash8(),
			"lease_expires_at": dt(lease), "heartbeat_at": dt(lease.Add(-time.Minute)), "status": "RUNNING", "network_id": net})
	}
}

func newScope(t *testing.T, label string, made time.Time) *scope.Scope {
	t.Helper()
	sc, err := scope.New(label, made, nil)
	require.NoError(t, err)
	return sc
}

// The leftovers of dead runs are listed per scope and app and deleted with --delete; a live
// runner's scope, a young scope and a scope whose lock lease still runs are left (the last
// with its reason); the JOB log is never touched; the record says all of it, redacted.
func TestSweepListsAndDeletesOnlyDeadRunsLeftovers(t *testing.T) {
	st := startStandaloneTenant(t)
	now := time.Now().UTC()
	dead := newScope(t, "sweep_dead", now.Add(-2*time.Hour))
	leased := newScope(t, "sweep_leased", now.Add(-2*time.Hour))
	young := newScope(t, "sweep_young", now.Add(-time.Minute))
	liveRunner := newScope(t, "sweep_live", now.Add(-2*time.Hour))
	reqOnly := newScope(t, "sweep_req", now.Add(-3*time.Hour))

	plantRun(t, st, dead, now.Add(-2*time.Hour))     // lease long over
	plantRun(t, st, leased, now.Add(10*time.Minute)) // lease still runs
	plantRun(t, st, young, time.Time{})
	plantRun(t, st, liveRunner, time.Time{})
	st.add(t, "request", map[string]any{"request_type": "STOP", "reason": dead.ID() + ":stop the drill", "request_state": "REQUESTED"})
	st.add(t, "request", map[string]any{"request_type": "STOP", "reason": reqOnly.ID() + ":left alone", "request_state": "DONE"})
	st.add(t, "request", map[string]any{"request_type": "STOP", "reason": "an operator's own request", "request_state": "DONE"})
	job, err := dead.JobID("job_a")
	require.NoError(t, err)
	st.add(t, "log", map[string]any{"record_type": "JOB", "job_id": job, "status": "RUNNING", "job_key": "e2e:" + job})
	logBefore := st.count(t, "log", "")

	// A live runner on this machine: its work dir names it (this test process) and its scope.
	wd, err := workdir.Create(st.tmpDir(), false)
	require.NoError(t, err)
	require.NoError(t, wd.AddScopes(liveRunner.ID()))
	require.Equal(t, os.Getpid(), mustOwner(t, st.tmpDir()).PID)
	require.True(t, runlock.ProcessAlive(os.Getpid(), mustOwner(t, st.tmpDir()).ProcStartMs))

	out := t.TempDir()
	args := []string{"sweep", "--target", "live", "--env-file", filepath.Join(st.envDir, ".env"), "--out", out}
	list := flowtest(t, st.env, args...)
	require.Equal(t, 0, list.code, list.stdout+list.stderr)
	assert.Regexp(t, `listed +`+dead.ID()[:len("KSQL_FLOW_TEST_")+17]+` \(made [^)]*\): state 3, audit 1, request 1`, list.stdout)
	assert.Regexp(t, `listed +`+reqOnly.ID()[:len("KSQL_FLOW_TEST_")+17]+` \(made [^)]*\): state 0, audit 0, request 1`, list.stdout)
	assert.Regexp(t, `left +`+leased.ID()[:len("KSQL_FLOW_TEST_")+17]+` .*state 3, audit 1, request 0`, list.stdout)
	assert.Contains(t, list.stdout, "holds a NETWORK_LOCK whose lease has not run out")
	assert.Contains(t, list.stdout, "not considered: "+young.ID()[:len("KSQL_FLOW_TEST_")+17]+": made ")
	assert.Contains(t, list.stdout, "not considered: "+liveRunner.ID()[:len("KSQL_FLOW_TEST_")+17]+": a live runner's scope")
	assert.NotRegexp(t, `(listed|left|deleted) +`+liveRunner.ID()[:len("KSQL_FLOW_TEST_")+17], list.stdout, "a live runner's scope is never listed")
	assert.Equal(t, 4, st.count(t, "state", `record_type in ("NETWORK_RUN")`), "listing deletes nothing")

	del := flowtest(t, st.env, append(args, "--delete")...)
	t.Log(del.stdout)
	require.Equal(t, 0, del.code, del.stdout+del.stderr)
	assert.Regexp(t, `deleted +`+dead.ID()[:len("KSQL_FLOW_TEST_")+17]+` .*— 5 record\(s\) deleted`, del.stdout)
	assert.Regexp(t, `deleted +`+reqOnly.ID()[:len("KSQL_FLOW_TEST_")+17]+` .*— 1 record\(s\) deleted`, del.stdout)
	assert.Regexp(t, `left +`+leased.ID()[:len("KSQL_FLOW_TEST_")+17], del.stdout)

	// What is left on the tenant: the leased, young and live runner's runs; the operator's
	// request; the JOB log as it was.
	var keys []string
	runs, err := st.api.GetAll(context.Background(), st.apps["state"], `record_type in ("NETWORK_RUN")`, nil)
	require.NoError(t, err)
	for _, r := range runs {
		keys = append(keys, r.Str("business_key"))
	}
	assert.ElementsMatch(t, []string{leased.ID(), young.ID(), liveRunner.ID()}, keys)
	assert.Equal(t, 0, st.count(t, "state", `record_type in ("NETWORK_LOCK") and lock_key in ("`+kintoneguard.N1Key("e2e", dead.ID()+"_net")+`")`), "the expired lock is gone")
	assert.Equal(t, 1, st.count(t, "state", `record_type in ("NETWORK_LOCK")`), "the live-leased lock stays")
	assert.Equal(t, 3, st.count(t, "audit", ""))
	assert.Equal(t, 1, st.count(t, "request", ""), "only the operator's own request is left")
	assert.Equal(t, logBefore, st.count(t, "log", ""), "the JOB log is never written")

	// The record: what was found, deleted and left, and why; no token in it.
	recs, err := filepath.Glob(filepath.Join(out, "*", "*-sweep*", sweep.RecordFile))
	require.NoError(t, err)
	require.Len(t, recs, 2, "one record per sweep")
	var rec sweep.Record
	for _, p := range recs {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var r sweep.Record
		require.NoError(t, json.Unmarshal(data, &r))
		if r.Delete {
			rec = r
		}
	}
	require.True(t, rec.Delete, "the --delete sweep's record")
	actions := map[string]string{}
	for _, s := range rec.Scopes {
		actions[s.Head] = s.Action
	}
	head := func(sc *scope.Scope) string { h, _, _ := kintoneguard.ScopeHead(sc.ID()); return h }
	assert.Equal(t, map[string]string{head(dead): "deleted", head(reqOnly): "deleted", head(leased): "left"}, actions)
	assert.Len(t, rec.Skipped, 2)
	leaks, err := redact.Verify(filepath.Dir(recs[0]), tokenSecrets(st.tokens), nil)
	require.NoError(t, err)
	assert.Empty(t, leaks)
	for _, tok := range st.tokens {
		assert.NotContains(t, del.stdout+del.stderr, tok)
	}
}

func mustOwner(t *testing.T, dir string) workdir.Owner {
	t.Helper()
	ents, err := workdir.List(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	return ents[0].Owner
}

func tokenSecrets(tokens []string) map[string]string {
	out := map[string]string{}
	for i, tok := range tokens {
		out["TOKEN_"+strconv.Itoa(i)] = tok
	}
	return out
}

func TestSweepRefusesABadOlderThan(t *testing.T) {
	r := flowtest(t, nil, "sweep", "--older-than", "-5m")
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "--older-than -5m0s: want a positive duration")
}

// Ctrl-C stops a live `sweep --delete` (it used to be caught and ignored), whether it comes
// while the sweep reads the leftovers of sixty dead runs (as soon as its work dir exists: its
// signals are caught by then) or once it has deleted the first scope. It exits 130; what it
// deleted is what its record says, written whole, and every scope it did not reach is still
// on the tenant, listed with why. Stopped while reading, it deletes and writes nothing.
func TestSweepDeleteStopsOnSIGINT(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("os.Interrupt cannot be sent on Windows")
	}
	for _, phase := range []string{"reading", "deleting"} {
		t.Run(phase, func(t *testing.T) {
			st := startStandaloneTenant(t)
			now := time.Now().UTC()
			const planted = 60
			for i := 0; i < planted; i++ {
				plantRun(t, st, newScope(t, fmt.Sprintf("sweep_int%02d", i), now.Add(-2*time.Hour)), time.Time{})
			}
			out := t.TempDir()
			cmd := flowtestCmd(st.env, "sweep", "--target", "live", "--env-file", filepath.Join(st.envDir, ".env"), "--out", out, "--delete")
			var buf syncBuffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			require.NoError(t, wait.Until(context.Background(), "the sweep "+phase, 60*time.Second, time.Millisecond,
				func(context.Context) (bool, string, error) {
					if phase == "deleting" {
						return strings.Contains(buf.String(), "flowtest sweep: deleted "), "", nil
					}
					ents, err := workdir.List(st.tmpDir())
					return err == nil && len(ents) > 0, "", nil
				}))
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			err := cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, buf.String())
			require.Equal(t, 130, ee.ExitCode(), buf.String())
			assert.Contains(t, buf.String(), "flowtest sweep: interrupted")

			left := st.count(t, "state", `record_type in ("NETWORK_RUN")`)
			recs, err := filepath.Glob(filepath.Join(out, "*", "*-sweep*", sweep.RecordFile))
			require.NoError(t, err)
			if phase == "reading" && len(recs) == 0 {
				assert.Equal(t, planted, left, "nothing deleted:\n%s", buf.String())
				return
			}
			require.Len(t, recs, 1, buf.String())
			data, err := os.ReadFile(recs[0])
			require.NoError(t, err)
			var rec sweep.Record
			require.NoError(t, json.Unmarshal(data, &rec), "the record is whole")
			deleted := 0
			for _, sc := range rec.Scopes {
				switch sc.Action {
				case "deleted":
					deleted++
				case "listed":
					assert.Equal(t, sweep.Interrupted, sc.Why, sc.Head)
				default:
					t.Errorf("%s: %s", sc.Head, sc.Action)
				}
			}
			t.Logf("stopped after deleting %d of %d scopes", deleted, planted)
			assert.Len(t, rec.Scopes, planted)
			assert.Less(t, deleted, planted, "the sweep stopped before the last scope:\n%s", buf.String())
			assert.Equal(t, planted-deleted, left, "the tenant holds exactly the scopes the record says were not deleted")
		})
	}
}
