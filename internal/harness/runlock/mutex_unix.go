//go:build unix

package runlock

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive OS lock on f, waiting for it. The kernel drops
// it when the process dies, so a crashed reclaimer never blocks the next.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
