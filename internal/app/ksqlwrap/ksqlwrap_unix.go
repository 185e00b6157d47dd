//go:build unix

package ksqlwrap

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/ksqlflow/flowtest/internal/base/interrupt"
)

// execReplace replaces this process by the launcher with args and the same environment; it
// returns only when that failed. A stop signal this process caught before the exec would be
// lost with its image: from here on the default action applies (as it does to a kSQL-Flow
// that has not installed its handler yet), and a signal already caught is raised again.
func execReplace(launcher string, args []string, stop context.Context) error {
	path, err := exec.LookPath(launcher)
	if err != nil {
		return err
	}
	signal.Reset(syscall.SIGTERM, syscall.SIGINT)
	if sig, ok := interrupt.SignalOf(stop).(syscall.Signal); ok {
		os.Exit(dieBy(sig))
	}
	return syscall.Exec(path, append([]string{launcher}, args...), os.Environ())
}

// forwardSignal passes a stop signal on to the child.
func forwardSignal(p *os.Process, s os.Signal) { _ = p.Signal(s) }

// bindChild has nothing to do on Unix: a relayed child is a short capabilities call, and the
// harness kills process trees deepest first.
func bindChild(*os.Process) (func(), error) { return func() {}, nil }

// exitLike is the exit the wrapper must end with for the child's: its code, or — for a child
// killed by a signal — death by the same signal when the wrapper owns its process (the caller
// then sees what it would have seen without the wrapper), else 128+n.
func exitLike(ps *os.ProcessState, self bool) int {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ps.ExitCode()
	}
	if self {
		return dieBy(ws.Signal())
	}
	return 128 + int(ws.Signal())
}

// dieBy ends this process by sig with its default action; if that action does not end it
// (the signal was ignored when the process started), 128+n is the exit code to use.
func dieBy(sig syscall.Signal) int {
	signal.Reset(sig)
	_ = syscall.Kill(os.Getpid(), sig)
	return 128 + int(sig)
}
