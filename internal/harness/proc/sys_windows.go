//go:build windows

package proc

import (
	"context"
	"os"
	"syscall"
	"unsafe"
)

// Variables a Windows child needs to start and find its tools (Node, PowerShell).
var platformEnvNames = []string{
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "PATH", "PATHEXT", "COMSPEC", "TEMP", "TMP",
	"USERPROFILE", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES",
	"NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE",
}

// parentMap takes one Toolhelp snapshot of all processes. (gopsutil v3 takes a whole
// snapshot per Ppid call on Windows, which is quadratic over the process table.)
func parentMap(context.Context) (map[int32]int32, error) {
	snap, err := syscall.CreateToolhelp32Snapshot(syscall.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.CloseHandle(snap)
	var pe syscall.ProcessEntry32
	pe.Size = uint32(unsafe.Sizeof(pe))
	if err := syscall.Process32First(snap, &pe); err != nil {
		return nil, err
	}
	out := map[int32]int32{}
	for {
		out[int32(pe.ProcessID)] = int32(pe.ParentProcessID)
		if err := syscall.Process32Next(snap, &pe); err != nil {
			break
		}
	}
	return out, nil
}

func sysProcAttr() *syscall.SysProcAttr {
	// CREATE_NEW_PROCESS_GROUP makes the child the root of a console process group so
	// CTRL_BREAK can be aimed at it alone. (It also makes the child ignore CTRL_C, which
	// is why the graceful stop uses CTRL_BREAK.)
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP, HideWindow: true}
}

var procGenerateConsoleCtrlEvent = syscall.NewLazyDLL("kernel32.dll").NewProc("GenerateConsoleCtrlEvent")

// sendStop sends CTRL_BREAK (Node's SIGBREAK) to the child's console process group.
// Both StopSignals map to it: Windows has no SIGINT/SIGTERM for another process. It
// requires the runner to be attached to a console the child shares; a runner started
// without a console (a service) gets an error here and Stop falls back to killing.
func sendStop(p *os.Process, _ StopSignal) error {
	r, _, err := procGenerateConsoleCtrlEvent.Call(uintptr(syscall.CTRL_BREAK_EVENT), uintptr(p.Pid))
	if r == 0 {
		return err
	}
	return nil
}

// exitSignal is always "": Windows processes end with an exit code only (a killed
// one with 1), as Node reports signal null there.
func exitSignal(*os.ProcessState) string { return "" }

func killPid(pid int32) error {
	p, err := os.FindProcess(int(pid))
	if err != nil {
		return errGone // OpenProcess failed: the process no longer exists
	}
	defer p.Release()
	if err := p.Kill(); err != nil {
		if err == os.ErrProcessDone {
			return errGone
		}
		return err
	}
	return nil
}

func isTextBusy(error) bool { return false }

// stopPid cannot freeze a process on Windows (no signal does; see freeze).
func stopPid(int32) error { return nil }

// Windows has no process groups that can be killed; orphans whose parent died are only
// reachable while some ancestor link remains, which is why trees are killed deepest
// first while the root still lives.
func killGroup(context.Context, int, bool) ([]int32, error) { return nil, nil }

func groupSurvivors(context.Context, *snapshot, int, bool) []int32 { return nil }
