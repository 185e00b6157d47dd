//go:build !windows

package ksqlflow

import (
	"errors"
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
