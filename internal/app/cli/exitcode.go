package cli

// The one mapping of domain errors to exit codes, shared by every command and helper.

import (
	"fmt"
	"io"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// refuse is a refusal (exit 2): nothing has started.
func refuse(format string, args ...any) error { return refusal.New(format, args...) }

// exitFor maps a domain error to its exit code, printing it: a refusal exits 2, an
// interruption 130, anything else 1.
func exitFor(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "flowtest %s: %v\n", cmd, err)
	switch {
	case refusal.Is(err):
		return runner.ExitRefused
	case refusal.IsInterrupted(err):
		return runner.ExitInterrupted
	}
	return runner.ExitFailed
}
