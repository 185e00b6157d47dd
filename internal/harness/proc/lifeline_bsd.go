//go:build !linux && !windows

package proc

import (
	"os/exec"
	"syscall"
)

// No parent-death signal outside Linux: the keeper (keeper_unix.go) and ParentPipe cover a
// dead runner there.
func withDeathSignal(*syscall.SysProcAttr) {}

func startChild(cmd *exec.Cmd) error { return cmd.Start() }

func afterStart(*exec.Cmd) error { return nil }
