package proc

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// busySamples samples probe n times, every 5 ms, and counts the busy answers.
func busySamples(probe func() bool, n int) int {
	busy := 0
	for range n {
		if probe() {
			busy++
		}
		time.Sleep(5 * time.Millisecond)
	}
	return busy
}

func startReady(t *testing.T, mode string) *Process {
	t.Helper()
	p, err := Start(quietCtx(), spec(t, mode, mode))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = p.KillTree(); _, _ = p.WaitTimeout(5 * time.Second) })
	waitStdout(t, p, mode+" ready", func(s string) bool { return strings.Contains(s, "ready") })
	return p
}

func TestBusyProbe(t *testing.T) {
	if runtime.GOOS != "linux" {
		p := startReady(t, "ignore")
		assert.Nil(t, p.BusyProbe(), "without /proc there is no probe")
		return
	}
	// A thread spinning is running or waiting for a CPU at every look, however loaded the
	// machine.
	t.Run("spinning", func(t *testing.T) {
		probe := startReady(t, "spin").BusyProbe()
		require.NotNil(t, probe)
		assert.Equal(t, 40, busySamples(probe, 40))
	})
	// Busy through a descendant only: the sleeping parent is not what the probe sees.
	t.Run("spinning child", func(t *testing.T) {
		probe := startReady(t, "spinchild").BusyProbe()
		require.Eventually(t, probe, 5*time.Second, 5*time.Millisecond, "the child starts spinning")
		assert.Equal(t, 40, busySamples(probe, 40))
	})
	// Asleep in time.Sleep: the Go runtime's own threads wake now and then (sysmon, timers),
	// so a look may land on one; that is rare, never most looks.
	t.Run("sleeping", func(t *testing.T) {
		p := startReady(t, "ignore")
		probe := p.BusyProbe()
		require.Eventually(t, func() bool { return !probe() }, 5*time.Second, 5*time.Millisecond, "the child falls asleep")
		n := busySamples(probe, 100)
		t.Logf("sleeping child: %d of 100 looks busy", n)
		assert.LessOrEqual(t, n, 5)
	})
	// A process gone counts as asleep (its probe says false; treeBusy says why).
	t.Run("exited", func(t *testing.T) {
		p, err := Start(quietCtx(), spec(t, "exit", "exit"))
		require.NoError(t, err)
		_, err = p.WaitTimeout(10 * time.Second)
		require.NoError(t, err)
		assert.False(t, p.BusyProbe()())
		_, err = treeBusy(p.Pid())
		assert.Error(t, err)
	})
}

// One look at a sleeping Go process (a dozen threads): what the explore scheduler pays per
// explored process every ProbeEvery.
func BenchmarkTreeBusy(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("no probe here")
	}
	exe, err := os.Executable()
	require.NoError(b, err)
	cmd := exec.Command(exe, "proctest-helper")
	cmd.Env = append(os.Environ(), "PROCTEST_MODE=ignore")
	require.NoError(b, cmd.Start())
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	time.Sleep(200 * time.Millisecond) // started and asleep
	for b.Loop() {
		_, _ = treeBusy(cmd.Process.Pid)
	}
}
