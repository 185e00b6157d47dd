//go:build !windows

package ksqlflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// child is a flowsandbox ksql-flow process started by a test.
type child struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

func startChild(t *testing.T, dir string, args ...string) *child {
	t.Helper()
	c := &child{done: make(chan struct{})}
	c.cmd = exec.Command(flowsandboxBin(t), append([]string{"ksql-flow"}, args...)...)
	c.cmd.Dir = dir
	c.cmd.Env = os.Environ() // holds the token variables startEmu set
	c.cmd.Stderr = &c.stderr
	require.NoError(t, c.cmd.Start())
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait waits for the child to exit and returns its exit code (-1 when killed by a signal).
func (c *child) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(within):
		t.Fatalf("ksql-flow child still running after %v; stderr:\n%s", within, c.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, c.err)
	return 0
}

// waitRunningWithMarker polls the JOB log until the attempt's row is RUNNING with the
// durable start marker — the point at which the scenarios kill or stop the child.
func waitRunningWithMarker(t *testing.T, e *emu, c *child, attempt string) kintoneapi.Record {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			t.Fatalf("child exited before its JOB log row was RUNNING with the marker; stderr:\n%s", c.stderr.String())
		default:
		}
		recs, err := e.admin.GetRecords(context.Background(), e.apps["log"].ID, `attempt_id = "`+attempt+`"`, nil)
		if err == nil && len(recs) == 1 && recs[0].Str("status") == "RUNNING" && recs[0].Str("runner_execution_started_at") != "" {
			return recs[0]
		}
		last = "no row yet"
		if err != nil {
			last = err.Error()
		} else if len(recs) == 1 {
			last = "status " + recs[0].Str("status") + ", marker " + recs[0].Str("runner_execution_started_at")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("JOB log row of %s not RUNNING with marker within 20 s (last: %s)", attempt, last)
	return nil
}

// longreadLatency makes job-longread.sql take 12 x 150 ms (plenty of statement boundaries).
var longreadLatency = map[string]time.Duration{"customers": 150 * time.Millisecond, "deals": 150 * time.Millisecond}

func TestSIGTERMMidReadCancels(t *testing.T) {
	e := startEmu(t, longreadLatency)
	args, resPath := e.orchestratorArgs(t, fixturePath("job-longread.sql"), "m5_shared_read", "attempt_term")
	c := startChild(t, t.TempDir(), args...)
	waitRunningWithMarker(t, e, c, "attempt_term")
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	code := c.wait(t, 15*time.Second)
	require.Equal(t, 3, code, c.stderr.String())

	r, m := readResult(t, resPath)
	checkResultShape(t, m, 3)
	assert.Equal(t, "CANCELLED", r.Status)
	assert.Equal(t, "CANCELLED", r.ResultCode)
	assert.Equal(t, "CANCELLED", r.Error.Category)
	assert.True(t, r.ExecutionStarted)
	l := findLog(t, e, "attempt_term")
	assert.Equal(t, "CANCELLED", l.Str("status"))
	assert.Empty(t, l.Str("job_key"), "the job lock is released on a graceful stop")
	assert.Equal(t, "sandbox:m5_shared_read", l.Str("job_key_done"))
	assert.NotContains(t, l.Str("log_detail"), "statements=14/14", "stopped before the end")
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	// A long per-request delay keeps the first read in flight while both signals arrive.
	e := startEmu(t, map[string]time.Duration{"customers": 1500 * time.Millisecond, "deals": 1500 * time.Millisecond})
	args, resPath := e.orchestratorArgs(t, fixturePath("job-longread.sql"), "m5_shared_read", "attempt_twice")
	c := startChild(t, t.TempDir(), args...)
	waitRunningWithMarker(t, e, c, "attempt_twice")
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGINT))
	code := c.wait(t, 2*time.Second)
	assert.Equal(t, 3, code, c.stderr.String())
	assert.NoFileExists(t, resPath, "no result is guaranteed (none is written) after a second signal")
	assert.Contains(t, c.stderr.String(), "second signal")
}

func TestSIGKILLLeavesOrphanThenForceUnlock(t *testing.T) {
	e := startEmu(t, longreadLatency)
	cwd := t.TempDir()
	args, resPath := e.orchestratorArgs(t, fixturePath("job-longread.sql"), "m5_shared_read", "attempt_kill")
	c := startChild(t, cwd, args...)
	marker := waitRunningWithMarker(t, e, c, "attempt_kill")
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	assert.Equal(t, -1, c.wait(t, 5*time.Second))
	assert.NoFileExists(t, resPath)

	// The orphan FlowNet must classify as UNKNOWN: RUNNING, marker set, key held.
	l := findLog(t, e, "attempt_kill")
	assert.Equal(t, "RUNNING", l.Str("status"))
	assert.Equal(t, marker.Str("runner_execution_started_at"), l.Str("runner_execution_started_at"))
	assert.Equal(t, "sandbox:m5_shared_read", l.Str("job_key"))
	assert.Empty(t, l.Str("finished_at"))

	// The same job cannot start while the orphan holds the key.
	args2, res2 := e.orchestratorArgs(t, fixturePath("diamond-customers.sql"), "m5_shared_read", "attempt_blocked")
	code, _, _ := invoke(args2...)
	require.Equal(t, 5, code)
	r, _ := readResult(t, res2)
	assert.Equal(t, "LOCK_CONFLICT", r.ResultCode)

	lockArgs := []string{"--job-key", "sandbox:m5_shared_read", "--profile", testProfile, "--config", e.cfgPath, "--json"}
	code, out, errOut := invoke(append([]string{"inspect-lock"}, lockArgs...)...)
	require.Equal(t, 0, code, errOut)
	var li LockInspection
	require.NoError(t, json.Unmarshal([]byte(out), &li))
	require.NotNil(t, li.Locked)
	assert.True(t, *li.Locked)
	assert.Equal(t, l.ID(), li.Record.RecordID)

	evidence := "file://" + filepath.ToSlash(resPath)
	code, out, errOut = invoke(append(append([]string{"force-unlock-job"}, lockArgs...),
		"--reason", "M5 kill試験の後始末", "--confirmed-by", "tester", "--evidence-ref", evidence)...)
	require.Equal(t, 0, code, errOut)
	var lr LockRecovery
	require.NoError(t, json.Unmarshal([]byte(out), &lr))
	assert.Equal(t, "RELEASED", lr.Outcome)
	assert.Equal(t, "FAILED", findLog(t, e, "attempt_kill").Str("status"))

	// The killed child's local lock file is stale (dead pid, same host): a new run in the
	// same working directory replaces it and runs.
	assert.FileExists(t, localLockPath(cwd, testProfile))
	args3, res3 := e.orchestratorArgs(t, fixturePath("diamond-customers.sql"), "m5_shared_read", "attempt_after_kill")
	c3 := startChild(t, cwd, args3...)
	require.Equal(t, 0, c3.wait(t, 20*time.Second), c3.stderr.String())
	r3, _ := readResult(t, res3)
	assert.Equal(t, "OK", r3.ResultCode)
}

// TestOrphanSurvivesClosedPipes: when FlowNet dies its pipes close; the orphaned kSQL-Flow
// must still finish and write its terminal JOB log status (m6-05 waits for it).
func TestOrphanSurvivesClosedPipes(t *testing.T) {
	e := startEmu(t, map[string]time.Duration{"customers": 20 * time.Millisecond, "deals": 20 * time.Millisecond})
	args, resPath := e.orchestratorArgs(t, fixturePath("job-longread.sql"), "m5_shared_read", "attempt_orphan")
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close()) // nobody will ever read: every write gets EPIPE
	cmd := exec.Command(flowsandboxBin(t), append([]string{"ksql-flow"}, args...)...)
	cmd.Dir = t.TempDir()
	cmd.Env = os.Environ()
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, cmd.Start())
	w.Close()
	require.NoError(t, cmd.Wait())
	res, _ := readResult(t, resPath)
	assert.Equal(t, "OK", res.ResultCode)
	assert.Equal(t, "SUCCESS", findLog(t, e, "attempt_orphan").Str("status"))
}
