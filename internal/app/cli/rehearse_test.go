package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/app/rehearse"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

func TestRehearseRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--latency", "-1s"}, "--latency"},
		{[]string{"--shards", "0"}, "--shards"},
		{[]string{"--tags", "@m5 and"}, "--tags"},
		{[]string{"--tags", "@m55"}, "@m55"},
		{[]string{"--features", "/nonexistent"}, "--features"},
		{[]string{"--confirmed-by", " "}, "--confirmed-by"},
		{[]string{"--step-timeout", "0s"}, "--step-timeout"},
		{[]string{"--timeout-scale", "-2"}, "--timeout-scale"},
		{[]string{"--shards", "2", "--shards", "3"}, "given 2 times"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		r := flowtest(t, nil, append([]string{"rehearse", "--out", t.TempDir()}, c.args...)...)
		assert.Equal(t, runner.ExitRefused, r.code, "%v: %s", c.args, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, c.want, c.args)
	}
}

// The rehearsal end to end on two tenants: each runs its shard through `run --target live`
// and both pass; the report and rehearsal.json name both archives, which are live runs of
// the right shard; the tenants are stopped afterwards.
func TestRehearseRunsTheLivePath(t *testing.T) {
	if testing.Short() {
		t.Skip("acceptance run skipped in -short mode")
	}
	out := t.TempDir()
	r := flowtest(t, nil, "rehearse", "--shards", "2", "--out", out,
		"--tags", "@m5-serial-success or @m5-mid-failure or @m6-01-resume-identity")
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "rehearsal PASS: 3 passed, 0 failed, 0 not run on 2 tenant(s)")
	assert.Contains(t, r.stdout, "[fast 1/2] START ")
	assert.Contains(t, r.stdout, "[fast 2/2] START ")

	files, err := filepath.Glob(filepath.Join(out, "*", "*", "rehearsal.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var rep rehearse.Report
	require.NoError(t, json.Unmarshal(data, &rep))
	assert.Equal(t, "PASS", rep.Verdict)
	require.Len(t, rep.Tenants, 2)
	for i, o := range rep.Tenants {
		_, run, err := results.ReadArchive(o.Archive)
		require.NoError(t, err)
		assert.Equal(t, "live", run.Target)
		assert.Equal(t, o.Shard, run.Environment["shard"])
		assert.Contains(t, r.stdout, o.Archive)
		assert.Contains(t, run.Command, "--confirmed-by", "tenant %d ran the operator's command line", i+1)
	}
	assert.Equal(t, 3, rep.Tenants[0].Passed+rep.Tenants[1].Passed)
	noneLeft(t)
}

// noneLeft waits for every process started from the test's binaries to be gone.
func noneLeft(t *testing.T) {
	t.Helper()
	assert.NoError(t, binariesGone("the rehearsal's processes to be gone", 10*time.Second, 100*time.Millisecond))
}

// binariesGone waits, polling every poll for at most limit, until no process started from the
// test's binaries is alive but those of except (e.g. a tenant the test still needs).
func binariesGone(what string, limit, poll time.Duration, except ...int32) error {
	return wait.Until(context.Background(), what, limit, poll,
		func(ctx context.Context) (bool, string, error) {
			pids, err := proc.FindByArgv(ctx, proc.ArgvContains(binDir))
			if err != nil {
				return false, "", err
			}
			pids = slices.DeleteFunc(pids, func(p int32) bool { return slices.Contains(except, p) })
			return len(pids) == 0, fmt.Sprintf("%d alive: %v", len(pids), pids), nil
		})
}

// syncBuffer is a bytes.Buffer a child's output and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ctrl-C during a rehearsal: the live run is interrupted (its archive says so), the tenant
// is stopped, nothing is left running, exit 130.
func TestRehearseInterrupted(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("acceptance run; os.Interrupt cannot be sent on Windows")
	}
	out := t.TempDir()
	cmd := flowtestCmd(baseEnv(os.TempDir()), "rehearse", "--out", out, "--tags", "@m6-05-status-readonly")
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	require.NoError(t, wait.Until(context.Background(), "the live run to start its scenario", 60*time.Second, 50*time.Millisecond,
		func(context.Context) (bool, string, error) {
			return strings.Contains(buf.String(), "] START m6-05-status-readonly"), "", nil
		}))
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, buf.String())
	assert.Equal(t, runner.ExitInterrupted, ee.ExitCode(), buf.String())
	assert.Contains(t, buf.String(), "rehearsal INTERRUPTED")
	runs, err := filepath.Glob(filepath.Join(out, "*", "*", "tenant-1", "*", "*", "run.json"))
	require.NoError(t, err)
	require.Len(t, runs, 1, buf.String())
	_, run, err := results.ReadArchive(filepath.Dir(runs[0]))
	require.NoError(t, err)
	assert.Equal(t, results.RunInterrupted, run.State)
	noneLeft(t)
}
