//go:build windows

package flownet

import (
	"errors"

	"golang.org/x/sys/windows"
)

// pidGone reports whether no process has pid. Windows has no ESRCH: a pid that cannot be
// opened because it does not exist (ERROR_INVALID_PARAMETER) or a process that has exited
// counts as gone; anything else (e.g. access denied) does not.
func pidGone(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	const stillActive = 259
	return code != stillActive
}
