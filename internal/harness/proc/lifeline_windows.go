//go:build windows

package proc

import (
	"fmt"
	"os/exec"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

var job struct {
	once sync.Once
	h    windows.Handle
	err  error
}

// runnerJob is the job object every child is put in. Its one handle is never closed by
// us: Windows closes it when the runner ends, however it ends, and
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE then kills every process in the job — the children
// and, since a child's children are born into its job, theirs (see lifeline.go).
func runnerJob() (windows.Handle, error) {
	job.once.Do(func() {
		h, err := windows.CreateJobObject(nil, nil)
		if err != nil {
			job.err = fmt.Errorf("create the runner's job object: %w", err)
			return
		}
		var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
		info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
		if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
			uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
			windows.CloseHandle(h)
			job.err = fmt.Errorf("make the runner's job object kill on close: %w", err)
			return
		}
		job.h = h
	})
	return job.h, job.err
}

func startChild(cmd *exec.Cmd) error {
	if _, err := runnerJob(); err != nil {
		return err // fail closed: a child that could outlive the runner is not started
	}
	return cmd.Start()
}

// afterStart puts the started child in the runner's job. os/exec cannot create a process
// suspended, so a grandchild the child starts before this call is not in the job (the race
// golang/go#79927 would close); our children start none that early.
func afterStart(cmd *exec.Cmd) error {
	h, err := runnerJob()
	if err != nil {
		return err
	}
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		return fmt.Errorf("open the child to put it in the runner's job: %w", err)
	}
	defer windows.CloseHandle(ph)
	if err := windows.AssignProcessToJobObject(h, ph); err != nil {
		return fmt.Errorf("put the child in the runner's job: %w", err)
	}
	return nil
}
