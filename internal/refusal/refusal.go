// Package refusal is the one domain error that decides an exit code: "refused before anything
// started" (a wrong flag value, a malformed input file, an empty selection, preflight). Domain
// packages return it; internal/cli maps it to runner.ExitRefused and any other error to
// runner.ExitFailed, so no domain package knows exit codes.
package refusal

import (
	"errors"
	"fmt"
)

// Error is a refusal: nothing was started.
type Error struct{ msg string }

func (e Error) Error() string { return e.msg }

// New is a refusal with a formatted message.
func New(format string, args ...any) error { return Error{fmt.Sprintf(format, args...)} }

// Is tells whether err is (or wraps) a refusal.
func Is(err error) bool {
	var r Error
	return errors.As(err, &r)
}
