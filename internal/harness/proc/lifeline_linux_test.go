//go:build linux

package proc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startRunner starts the test binary as a runner (actRunner) and returns it with the pids of
// its child and grandchild and whether the child outlived the thread that asked for it.
func startRunner(t *testing.T, keeper bool) (*exec.Cmd, []int32, string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "proctest-helper")
	cmd.Env = append(os.Environ(), "PROCTEST_MODE=runner", fmt.Sprintf("PROCTEST_KEEPER=%d", map[bool]int{true: 1, false: 0}[keeper]))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var pids []int32
	verdict := ""
	sc := bufio.NewScanner(out)
	for verdict == "" && sc.Scan() {
		var pid, level int32
		if _, err := fmt.Sscanf(sc.Text(), "pid %d level %d", &pid, &level); err == nil {
			pids = append(pids, pid)
			continue
		}
		verdict = strings.TrimSpace(sc.Text())
	}
	require.Len(t, pids, 2, "child and grandchild pids")
	for _, pid := range pids {
		pid := pid
		t.Cleanup(func() { _ = syscall.Kill(int(pid), syscall.SIGKILL) })
	}
	return cmd, pids, verdict
}

// awaitAllGone polls (no fixed sleep as the check) until none of pids is alive.
func awaitAllGone(pids []int32, within time.Duration) []int32 {
	deadline := time.Now().Add(within)
	for {
		var alive []int32
		for _, pid := range pids {
			if PidAlive(context.Background(), pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A runner killed with SIGKILL runs no cleanup: its child dies by its parent-death signal, the
// grandchild (same group, not the runner's child) by the keeper. The child was asked for from
// a goroutine whose locked thread then ended, which must not have killed it.
func TestChildrenDieWithAKilledRunner(t *testing.T) {
	runner, pids, verdict := startRunner(t, true)
	assert.Equal(t, "alive", verdict, "the child must outlive the thread that asked for it, only not the runner")
	require.NoError(t, runner.Process.Signal(syscall.SIGKILL))
	_ = runner.Wait()
	assert.Empty(t, awaitAllGone(pids, 10*time.Second), "processes of the killed runner still alive")
}

// Without the keeper the grandchild outlives a killed runner: what the keeper is for (and a
// check that the test above can fail).
func TestWithoutTheKeeperTheGrandchildSurvives(t *testing.T) {
	runner, pids, _ := startRunner(t, false)
	require.NoError(t, runner.Process.Signal(syscall.SIGKILL))
	_ = runner.Wait()
	assert.Empty(t, awaitAllGone(pids[:1], 10*time.Second), "the child dies by its parent-death signal alone")
	assert.True(t, PidAlive(context.Background(), pids[1]), "the grandchild is reached by nothing but the keeper")
}
