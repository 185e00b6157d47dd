// Package refusal holds the domain errors that decide an exit code: "refused before anything
// started" (a wrong flag value, a malformed input file, an empty selection, preflight) and
// "interrupted" (a signal cut the work short). Domain packages return them; internal/app/cli maps
// a refusal to runner.ExitRefused, an interruption to runner.ExitInterrupted and any other
// error to runner.ExitFailed, so no domain package knows exit codes.
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

// Interruption is the work cut short by a signal.
type Interruption struct{ msg string }

func (e Interruption) Error() string { return e.msg }

// Interrupted is an interruption with a formatted message.
func Interrupted(format string, args ...any) error { return Interruption{fmt.Sprintf(format, args...)} }

// IsInterrupted tells whether err is (or wraps) an interruption.
func IsInterrupted(err error) bool {
	var i Interruption
	return errors.As(err, &i)
}
