//go:build !windows

package flownet

import (
	"errors"
	"syscall"
)

// pidGone reports whether no process has pid: only ESRCH counts (§1.5), so a process we
// may not signal (EPERM) is still there.
func pidGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
