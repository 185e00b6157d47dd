//go:build !windows

package cli

import "os"

// enableVT: every Unix terminal understands the erase-line sequence.
func enableVT(*os.File) bool { return true }
