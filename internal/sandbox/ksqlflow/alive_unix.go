//go:build !windows

package ksqlflow

import (
	"errors"
	"os/signal"
	"syscall"
)

// processAlive reports whether pid exists (signal 0; EPERM still means it exists).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ignoreBrokenPipe keeps an orphaned run alive when its parent (FlowNet) died and the
// stdout/stderr pipes are gone: Go would otherwise exit on SIGPIPE at the next progress
// line, leaving the JOB log RUNNING although the job could finish.
func ignoreBrokenPipe() { signal.Ignore(syscall.SIGPIPE) }
