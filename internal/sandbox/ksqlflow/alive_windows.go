//go:build windows

package ksqlflow

import "syscall"

// processAlive opens the process and checks it has not exited (STILL_ACTIVE = 259).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	const queryLimited = 0x1000 // PROCESS_QUERY_LIMITED_INFORMATION
	h, err := syscall.OpenProcess(queryLimited, false, uint32(pid))
	if err != nil {
		return false
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if err := syscall.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == 259
}

// ignoreBrokenPipe: Windows has no SIGPIPE; a write to a closed pipe just fails.
func ignoreBrokenPipe() {}
