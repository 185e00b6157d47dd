//go:build windows

package proc

import (
	"io"
)

// SetKeeper does nothing on Windows: the runner's job object already holds every descendant
// and kills them when the runner ends (lifeline_windows.go).
func SetKeeper(string, ...string) {}

func keeperAdd(int) error { return nil }

func keeperForget(int) {}

// KeeperMain is never started on Windows; it only drains in.
func KeeperMain(in io.Reader, _ io.Writer) int {
	_, _ = io.Copy(io.Discard, in)
	return 0
}
