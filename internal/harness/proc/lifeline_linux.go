//go:build linux

package proc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

func withDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

var forker struct {
	once sync.Once
	reqs chan func()
}

// startChild forks cmd on the one goroutine that is locked to its OS thread for the life of
// the process, so that the child's parent-death signal fires only when the runner ends (see
// lifeline.go). Starts are serialized; a fork takes well under a millisecond.
func startChild(cmd *exec.Cmd) error {
	forker.once.Do(func() {
		forker.reqs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
			for f := range forker.reqs {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	forker.reqs <- func() { errc <- cmd.Start() }
	return <-errc
}

func afterStart(*exec.Cmd) error { return nil }
