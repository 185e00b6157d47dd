package cli

// What every command runs with (streams, interrupts, its row's name and usage, the flags
// given), apart from the table so that a command's file needs nothing of the table's.

import (
	"context"
	"io"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
)

// invocation is what a command runs with: the process's streams and its interrupts.
type invocation struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// stop is cancelled by the first SIGINT/SIGTERM (interrupt.Watch): a command that loops or
	// does I/O stops at its next step, leaves no file written by halves and exits 130
	// (refusal.Interrupted); now is cancelled by the second, for what must then stop at once.
	// The run path's runner and the kSQL-Flow wrapper act on both themselves (the runner:
	// stop the scenarios, then kill their children).
	stop, now context.Context
	// name and usage are the command's row (its name; its usage line, what follows
	// "flowtest "), handed down so that the commands' refusals need not look the table up.
	name, usage string
	// uses are the flags the user gave, with their raw values (the tree's one parse).
	uses map[string]flagUse
	// line is the command line as given, from "flowtest" on (run.json's command).
	line []string
}

// stopped is the interruption of a command that a signal stopped before what (nothing of it
// written), nil while no signal came: the check of a command whose steps are each short
// and write whole, between them.
func (inv invocation) stopped(what string) error {
	if inv.stop != nil && inv.stop.Err() != nil {
		return refusal.Interrupted("interrupted before %s; nothing was written", what)
	}
	return nil
}
