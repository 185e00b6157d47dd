//go:build linux

package cli

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/harness/workdir"
)

// A runner killed with SIGKILL in the middle of a scenario — no signal handler, no cleanup —
// leaves no process behind: the emulators, FlowNet, kSQL-Flow and the keeper all end within
// a few seconds (5 s, for a loaded machine; FlowNet left alone gives up on a vanished
// emulator only after ~10 s, so the bound still tells).
func TestKilledRunnerLeavesNoProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("acceptance run skipped in -short mode")
	}
	out := t.TempDir()
	tmp := t.TempDir() // the runner's temp dir: its work dir, and nobody else's
	env := baseEnv(tmp)
	cmd := flowtestCmd(env, "run", "--out", out, "--concurrency", "1",
		"--sandbox-read-latency", "0", "--tags", "@m6-04-force-unlock-drill")
	_, kill := startUntilLine(t, cmd, "started FlowNet ", "never saw the scenario start FlowNet")
	ctx := context.Background()
	before, err := proc.FindByArgv(ctx, proc.ArgvContains(binDir))
	require.NoError(t, err)
	// The runner, the emulator and at least FlowNet (and the keeper).
	require.GreaterOrEqual(t, len(before), 3, "processes of the running scenario: %v", before)
	t.Logf("before the kill: %d processes: %v", len(before), before)

	kill()

	err = binariesGone("every process of the killed runner to be gone", 5*time.Second, 100*time.Millisecond)
	assert.NoError(t, err, "processes were %v before the kill", before)

	// Its work dir (unredacted logs and configs) stayed; it names its owner, and the next run
	// removes it and says so.
	left, err := workdir.List(tmp)
	require.NoError(t, err)
	require.Len(t, left, 1, "the killed run's work dir")
	assert.Equal(t, cmd.Process.Pid, left[0].Owner.PID)
	assert.False(t, left[0].Alive)
	next := flowtest(t, env, "run", "--dry-run", "--out", out, "--tags", "@m6-04-force-unlock-drill")
	assert.Equal(t, 0, next.code, next.stdout+next.stderr)
	assert.Contains(t, next.stderr, "removed 1 work dir(s) of dead runs")
	assert.Contains(t, next.stderr, left[0].Path+" (pid "+strconv.Itoa(cmd.Process.Pid))
	assert.NoDirExists(t, left[0].Path)
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
