//go:build linux

package cli

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/wait"
)

// liveArgs are the arguments of a live run of one scenario on the stand-alone tenant.
func (st *standaloneTenant) liveArgs(dir, tags string) []string {
	return []string{"run", "--target", "live", "--env-file", filepath.Join(st.envDir, ".env"), "--confirmed-by", "drill",
		"--lock-dir", filepath.Join(dir, "locks"), "--out", filepath.Join(dir, "out"), "--tags", tags}
}

// killRunAt starts a live run and SIGKILLs it when a console line contains at; it returns
// the lines seen.
func killRunAt(t *testing.T, st *standaloneTenant, dir, tags, at string) []string {
	t.Helper()
	cmd := flowtestCmd(st.env, st.liveArgs(dir, tags)...)
	lines, kill := startUntilLine(t, cmd, at, "the kill point never came")
	kill()
	return lines
}

// startUntilLine starts cmd and reads its stdout until a line contains at (failing the test,
// saying never, when none does); it returns the lines read and kill, which SIGKILLs cmd,
// drains its stdout and waits for it.
func startUntilLine(t *testing.T, cmd *exec.Cmd, at, never string) (lines []string, kill func()) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), at) {
			break
		}
	}
	kill = func() {
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		go func() { _, _ = bufio.NewReader(out).WriteTo(discardWriter{}) }()
		_ = cmd.Wait()
	}
	if !strings.Contains(strings.Join(lines, "\n"), at) { // its stdout ended first
		_ = cmd.Wait()
		require.FailNow(t, never, "stdout:\n%s", strings.Join(lines, "\n"))
	}
	return lines, kill
}

// noProcessLeft waits (bounded) until nothing started from the test's binaries is alive but
// the tenant.
func noProcessLeft(t *testing.T, st *standaloneTenant) {
	t.Helper()
	assert.NoError(t, binariesGone("the killed run's processes to be gone", 5*time.Second, 50*time.Millisecond, int32(st.pid)))
}

// The crash drill: a live run on a stand-alone tenant is killed with SIGKILL at a
// kill point; nothing of it stays running; `flowtest sweep` lists what it left and --delete
// removes it; then the tenant-activity check passes and the same scenario passes. Where a
// lock is held by the killed run, the sweep leaves it with the lease as reason and the next
// run is refused by the tenant-activity check until lease_expires_at + 60 s (waited out in
// TestCrashDrillHeldLockIsSweptOnceItsLeaseRunsOut).
func TestCrashDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("acceptance runs skipped in -short mode")
	}
	sweep := func(t *testing.T, st *standaloneTenant, dir string, del bool) result {
		args := []string{"sweep", "--target", "live", "--env-file", filepath.Join(st.envDir, ".env"), "--older-than", "1ns", "--out", filepath.Join(dir, "out")}
		if del {
			args = append(args, "--delete")
		}
		r := flowtest(t, st.env, args...)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		return r
	}
	for _, kp := range []struct {
		name, tags, at string
		lockHeld       bool
	}{
		{"before the first FlowNet write", "@m5-lock-conflict", "START m5-lock-conflict", false},
		{"as the cleanup begins", "@m5-lock-conflict", "note: lock-conflict trial 1", false},
		{"while a lock is held", "@m6-04-force-unlock-drill", "note: killed the tree of the drill run", true},
	} {
		t.Run(kp.name, func(t *testing.T) {
			st := startStandaloneTenant(t)
			dir := t.TempDir()
			killRunAt(t, st, dir, kp.tags, kp.at)
			noProcessLeft(t, st)

			listed := sweep(t, st, dir, false)
			t.Logf("left behind:\n%s", listed.stdout)
			assert.Contains(t, listed.stderr, "removed 1 work dir(s) of dead runs", "the killed run's work dir goes at the next command")
			swept := sweep(t, st, dir, true)
			again := sweep(t, st, dir, false)
			next := flowtest(t, st.env, st.liveArgs(dir, kp.tags)...)
			if kp.lockHeld {
				assert.Regexp(t, `left +KSQL_FLOW_TEST_`, swept.stdout)
				assert.Contains(t, swept.stdout, "holds a NETWORK_LOCK whose lease has not run out")
				assert.Equal(t, 2, next.code, "refused while the dead run's lease runs: "+next.stdout+next.stderr)
				assert.Contains(t, next.stdout+next.stderr, "tenant-activity")
				return
			}
			assert.NotContains(t, swept.stdout, "failed")
			assert.Contains(t, again.stdout, "no leftovers", "the sweep left nothing")
			assert.Equal(t, 0, next.code, "the next run passes: "+next.stdout+next.stderr)
			assert.Contains(t, next.stdout, "1 passed")
		})
	}
}

// The held lock of a killed run, to the end: the sweep leaves it while lease_expires_at + 60 s
// has not passed, deletes the scope once it has, and then the tenant-activity check passes. The wait is
// the product's rule, bounded by the fixture's short lease and kintone's minute precision
// (lease_expires_at is stored rounded down to the minute): at most about a minute.
func TestCrashDrillHeldLockIsSweptOnceItsLeaseRunsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("acceptance runs skipped in -short mode")
	}
	st := startStandaloneTenant(t)
	dir := t.TempDir()
	tags := "@m6-04-force-unlock-drill"
	killRunAt(t, st, dir, tags, "note: killed the tree of the drill run")
	noProcessLeft(t, st)
	args := []string{"sweep", "--target", "live", "--env-file", filepath.Join(st.envDir, ".env"), "--older-than", "1ns", "--out", filepath.Join(dir, "out"), "--delete"}

	locks, err := st.api.GetAll(context.Background(), st.apps["state"], `record_type in ("NETWORK_LOCK") and status in ("RUNNING")`, nil)
	require.NoError(t, err)
	require.NotEmpty(t, locks, "the killed run holds a network lock")
	var stale time.Time
	for _, l := range locks {
		end, err := time.Parse(time.RFC3339, l.Str("lease_expires_at"))
		require.NoError(t, err)
		if s := end.Add(time.Minute); s.After(stale) {
			stale = s
		}
	}
	if time.Now().Before(stale) {
		early := flowtest(t, st.env, args...)
		require.Equal(t, 0, early.code, early.stdout+early.stderr)
		assert.Contains(t, early.stdout, "holds a NETWORK_LOCK whose lease has not run out")
	}
	require.NoError(t, wait.Until(context.Background(), "the dead run's lease + 60 s to pass", 2*time.Minute, time.Second,
		func(context.Context) (bool, string, error) {
			return time.Now().After(stale.Add(time.Second)), "stale after " + stale.Format(time.RFC3339), nil
		}))
	swept := flowtest(t, st.env, args...)
	require.Equal(t, 0, swept.code, swept.stdout+swept.stderr)
	assert.Regexp(t, `deleted +KSQL_FLOW_TEST_`, swept.stdout)
	assert.Equal(t, 0, st.count(t, "state", `record_type in ("NETWORK_LOCK") and status in ("RUNNING")`), "the held lock is gone")
	// The tenant-activity check passes again (`check`: the scenario itself takes a minute
	// more, waiting for a lease of its own; the other kill points rerun theirs).
	check := flowtest(t, st.env, "check", "--target", "live", "--env-file", filepath.Join(st.envDir, ".env"), "--confirmed-by", "drill",
		"--tags", tags)
	assert.Equal(t, 0, check.code, check.stdout+check.stderr)
	assert.Regexp(t, `PASS +tenant-activity`, check.stdout)
}
