//go:build windows

package ksqlwrap

import (
	"context"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// execReplace is not available: Windows has no exec, the child is relayed.
func execReplace(string, []string, context.Context) error { return errNoExec }

// forwardSignal has nothing to send: the stop request is CTRL_BREAK to the console process
// group, which the child (started without a group of its own) received with the wrapper.
// Catching it here only keeps the wrapper alive until the child has stopped.
func forwardSignal(*os.Process, os.Signal) {}

// bindChild puts the child in a job object that kills it when the wrapper's handle closes,
// so a wrapper killed by FlowNet (TerminateProcess) does not leave kSQL-Flow running.
func bindChild(p *os.Process) (func(), error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return nil, fmt.Errorf("set kill-on-close: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return nil, fmt.Errorf("open the child: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return nil, fmt.Errorf("assign the child to the job: %w", err)
	}
	return func() { _ = windows.CloseHandle(job) }, nil
}

// exitLike is the child's exit code (Windows processes end with a code only).
func exitLike(ps *os.ProcessState, _ bool) int { return ps.ExitCode() }
