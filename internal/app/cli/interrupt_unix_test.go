//go:build unix

package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ctrl-C in the middle of a scenario that has child processes running: the scenario stops,
// its children (and the sandbox emulator) are gone, the archive says interrupted, exit 130.
func TestInterruptMidScenarioLeavesNothingBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("acceptance run skipped in -short mode")
	}
	out := t.TempDir()
	cmd := flowtestCmd(baseEnv(os.TempDir()), "run", "--out", out, "--concurrency", "1", "--tags", "@m5-lock-conflict or @m5-kill-unknown")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	var lines []string
	sc := bufio.NewScanner(stdout)
	signalled := false
	for sc.Scan() {
		lines = append(lines, sc.Text())
		// The lock-conflict scenario holds a standalone kSQL-Flow and a FlowNet run (whatever
		// the steps name them: `started FlowNet "<name>" (pid N)`).
		if !signalled && strings.Contains(sc.Text(), "started FlowNet ") {
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			signalled = true
		}
	}
	err = cmd.Wait()
	require.True(t, signalled, "never saw the scenario start its processes:\n%s", strings.Join(lines, "\n"))
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, strings.Join(lines, "\n"))
	assert.Equal(t, 130, ee.ExitCode(), strings.Join(lines, "\n"))

	// Nothing started from the test's binaries is still alive.
	err = binariesGone("children of the interrupted run to be gone", 10*time.Second, 100*time.Millisecond)
	assert.NoError(t, err)

	var dir string
	for _, l := range lines {
		if i := strings.Index(l, "archive "); i >= 0 && strings.HasPrefix(l, "flowtest ") {
			dir = strings.TrimSpace(l[i+len("archive "):])
		}
	}
	require.NotEmpty(t, dir)
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	require.NoError(t, err)
	var run struct {
		State     string
		Scenarios []struct{ ID, Status, StatusReason string }
	}
	require.NoError(t, json.Unmarshal(data, &run))
	assert.Equal(t, "interrupted", run.State)
	for _, s := range run.Scenarios {
		switch s.ID {
		case "m5-lock-conflict":
			assert.Equal(t, "interrupted", s.Status, "interrupted is its own status, not failed")
		case "m5-kill-unknown":
			assert.Equal(t, "not-run", s.Status)
		}
	}
}
