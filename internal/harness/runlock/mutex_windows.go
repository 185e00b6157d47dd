//go:build windows

package runlock

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive OS lock on f, waiting for it. Windows drops it
// when the process dies, so a crashed reclaimer never blocks the next.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}

func unlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
