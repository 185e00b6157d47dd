//go:build !windows

package proc

import (
	"bytes"
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

// The keeper kills the groups it was told about and still has at end of input, and nothing
// else: a forgotten group, a line that is no group, and never -1 or 0 (kill(-1) would signal
// every process the user may signal).
func TestKeeperKillsOnlyRegisteredGroups(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	start := func() *exec.Cmd {
		cmd := exec.Command(exe, "proctest-helper", "--level", "0")
		cmd.Env = append(os.Environ(), "PROCTEST_MODE=tree")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	kept, forgotten := start(), start()
	in := strings.NewReader(fmt.Sprintf("+%d\n+%d\n-%d\n+1\n+0\n+-7\nnot a line\n", kept.Process.Pid, forgotten.Process.Pid, forgotten.Process.Pid))
	var stderr bytes.Buffer
	assert.Equal(t, 0, KeeperMain(in, &stderr))
	assert.Equal(t, fmt.Sprintf("flowtest keeper: the runner ended and left 1 process group(s) alive; killed them: [%d]\n", kept.Process.Pid), stderr.String())

	done := make(chan error, 1)
	go func() { done <- kept.Wait() }()
	select {
	case err := <-done:
		assert.Contains(t, fmt.Sprint(err), "killed")
	case <-time.After(5 * time.Second):
		t.Fatal("the registered group was not killed")
	}
	assert.True(t, PidAlive(context.Background(), int32(forgotten.Process.Pid)), "a forgotten group is left alone")
}
