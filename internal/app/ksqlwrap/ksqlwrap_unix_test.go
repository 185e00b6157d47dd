//go:build unix

package ksqlwrap

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/base/interrupt"
	"github.com/ksqlflow/flowtest/internal/steps/csv/wrapmode"
)

// readyPid reads the fake's "ready <pid>" line: its stop handler is installed.
func readyPid(t *testing.T, r *bufio.Reader) int {
	t.Helper()
	line, err := r.ReadString('\n')
	require.NoError(t, err, "the fake kSQL-Flow said nothing on stderr")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
	require.NoError(t, err, "line %q", line)
	return pid
}

// In-process relay: a stop signal the wrapper receives reaches the child, whose exit code
// (3, CANCELLED) is the wrapper's.
func TestKsqlWrapRelayForwardsStopSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			pr, pw := io.Pipe()
			sigs := make(chan os.Signal, 1)
			stop, now, release := interrupt.Watch(sigs)
			defer release()
			var out bytes.Buffer
			done := make(chan int, 1)
			go func() {
				code, _ := Run(append(fakeLauncher(t, wrapmode.LegacyCapabilities), "capabilities", "--json", "--wait-stop"),
					strings.NewReader(""), &out, pw, stop, now)
				_ = pw.Close()
				done <- code
			}()
			stderr := bufio.NewReader(pr)
			readyPid(t, stderr)
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			sigs <- sig
			assert.Equal(t, 3, <-done)
			assert.Equal(t, "stopped by "+sig.String()+"\n", out.String(), "a failed capabilities call passes unchanged")
		})
	}
}

// In-process relay: a child killed by a signal is reported as 128+n (the wrapper does not
// own its process here, so it must not die itself).
func TestKsqlWrapRelayReportsAChildKilledByASignal(t *testing.T) {
	r := wrapIn(t, wrapmode.LegacyCapabilities, "", "capabilities", "--json", "--die")
	assert.Equal(t, 128+int(syscall.SIGKILL), r.code)
}

// wrapperProcess starts the built flowtest as the wrapper of the fake kSQL-Flow.
func wrapperProcess(t *testing.T, mode string, call ...string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "flowtest"), append(append([]string{wrapmode.Command}, fakeLauncher(t, mode)...), call...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(stderr), &out
}

// SIGTERM to the wrapper FlowNet started is kSQL-Flow's graceful stop on both paths, its exit
// code coming straight back: the pass-through path replaces the wrapper by the real kSQL-Flow
// (the pid FlowNet holds is kSQL-Flow's own), the relay path forwards it to its child.
func TestKsqlWrapProcessStopsGracefullyOnSIGTERM(t *testing.T) {
	for _, c := range []struct {
		name, mode string
		call       []string
		samePid    bool
	}{
		{"exec keeps the pid", wrapmode.ExportSJIS, []string{"wait-stop"}, true},
		{"relay forwards to its child", wrapmode.LegacyCapabilities, []string{"capabilities", "--json", "--wait-stop"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, stderr, out := wrapperProcess(t, c.mode, c.call...)
			assert.Equal(t, c.samePid, cmd.Process.Pid == readyPid(t, stderr), "kSQL-Flow runs as the wrapper's own process")
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			err := cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 3, ee.ExitCode())
			assert.Equal(t, "stopped by terminated\n", out.String())
		})
	}
}

// The relay path as a process: a child killed by a signal kills the wrapper by the same one.
func TestKsqlWrapRelayProcessDiesLikeItsChild(t *testing.T) {
	cmd, _, _ := wrapperProcess(t, wrapmode.LegacyCapabilities, "capabilities", "--json", "--die")
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	ws, ok := ee.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled(), "exit status %v", ee)
	assert.Equal(t, syscall.SIGKILL, ws.Signal())
}
