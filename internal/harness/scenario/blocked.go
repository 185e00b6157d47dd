package scenario

import (
	"errors"
	"fmt"
)

// BlockedError is a step's report that a precondition of the scenario is not met (a pending
// request in the request app, an app the scenario needs is unreachable, …): the scenario
// cannot say anything about the SUT, so the runner records it as blocked, neither failed nor
// passed. A step returns it with Blocked.
type BlockedError struct {
	Precondition string
}

func (e *BlockedError) Error() string { return "blocked: " + e.Precondition }

// Blocked returns a BlockedError naming the precondition that is not met.
func Blocked(format string, args ...any) error {
	return &BlockedError{Precondition: fmt.Sprintf(format, args...)}
}

// IsBlocked reports whether err is (or wraps) a BlockedError, and its precondition.
func IsBlocked(err error) (string, bool) {
	var b *BlockedError
	if errors.As(err, &b) {
		return b.Precondition, true
	}
	return "", false
}
