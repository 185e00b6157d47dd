//go:build !windows

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/shirou/gopsutil/v3/process"
)

// Variables a child needs on Unix to behave like one started from a shell.
var platformEnvNames = []string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"}

// parentMap reads every process's parent; gopsutil reads /proc on Linux (no pgrep).
func parentMap(ctx context.Context) (map[int32]int32, error) {
	pids, err := process.PidsWithContext(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int32, len(pids))
	for _, pid := range pids {
		ppid, err := (&process.Process{Pid: pid}).PpidWithContext(ctx)
		if err != nil {
			continue // exited while we looked
		}
		out[pid] = ppid
	}
	return out, nil
}

func sysProcAttr() *syscall.SysProcAttr {
	// Own process group: pgid == pid, so a group kill uses -pid and never needs
	// Getpgid on a leader that may already be dead.
	a := &syscall.SysProcAttr{Setpgid: true}
	withDeathSignal(a) // Linux: killed when the runner dies (lifeline.go)
	return a
}

func sendStop(p *os.Process, s StopSignal) error {
	sig := syscall.SIGINT
	if s == Terminate {
		sig = syscall.SIGTERM
	}
	return p.Signal(sig)
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGKILL: "SIGKILL", syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM",
	syscall.SIGHUP: "SIGHUP", syscall.SIGQUIT: "SIGQUIT", syscall.SIGABRT: "SIGABRT",
	syscall.SIGSEGV: "SIGSEGV", syscall.SIGPIPE: "SIGPIPE", syscall.SIGBUS: "SIGBUS",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
}

// exitSignal names the terminating signal the way Node does ("SIGKILL"), since the
// scenarios were written against Node's child.signalCode.
func exitSignal(st *os.ProcessState) string {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	if n, ok := signalNames[ws.Signal()]; ok {
		return n
	}
	return ws.Signal().String()
}

func killPid(pid int32) error {
	err := syscall.Kill(int(pid), syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return errGone
	}
	return err
}

func isTextBusy(err error) bool { return errors.Is(err, syscall.ETXTBSY) }

// stopPid freezes a process (SIGSTOP) until it is killed.
func stopPid(pid int32) error { return syscall.Kill(int(pid), syscall.SIGSTOP) }

// groupMembers lists the live, non-zombie processes whose process group is pgid.
// Once our leader is gone, a live process whose pid equals pgid can only be a
// stranger that reused the pid and leads a group of the same id: then the group is
// not ours and nothing is returned.
func groupMembers(ctx context.Context, s *snapshot, pgid int, leaderAlive bool) []int32 {
	var out []int32
	for pid, info := range s.procs {
		g, err := syscall.Getpgid(int(pid))
		if err != nil || g != pgid {
			continue
		}
		if sameProcess(ctx, pid, info) {
			if int(pid) == pgid && !leaderAlive {
				return nil
			}
			out = append(out, pid)
		}
	}
	return out
}

// killGroup kills what is left of the child's process group: after a tree walk this is
// the orphans (reparented away from the child). The group is signalled only if it
// still has members, so a reused pid can never redirect the kill; the kernel does not
// reuse a pid while a group of that id exists.
func killGroup(ctx context.Context, pgid int, leaderAlive bool) ([]int32, error) {
	s, err := takeSnapshot(ctx, false)
	if err != nil {
		return nil, err
	}
	members := groupMembers(ctx, s, pgid, leaderAlive)
	if len(members) == 0 {
		return nil, nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return nil, fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	if err := awaitGone(ctx, s, members); err != nil {
		return members, fmt.Errorf("process group %d: %w", pgid, err)
	}
	return members, nil
}

// groupSurvivors lists the processes a leak check counts for a child: its group (Unix).
func groupSurvivors(ctx context.Context, s *snapshot, pgid int, leaderAlive bool) []int32 {
	return groupMembers(ctx, s, pgid, leaderAlive)
}
