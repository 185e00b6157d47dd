//go:build !linux

package proc

import "errors"

// Without /proc there is no cheap look at every thread's state: no probe.
func busySupported() bool { return false }

func treeBusy(int) (bool, error) { return false, errors.New("busy probe: not supported here") }
