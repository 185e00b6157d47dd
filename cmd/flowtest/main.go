// Command flowtest is the acceptance-test runner for kSQL-FlowNet. This package only wires the
// process: the keeper hook, signals, profiles; the commands are internal/app/cli's table
// (`flowtest help` lists them).
package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/ksqlflow/flowtest/internal/app/cli"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == proc.KeeperCommand {
		// The process keeper of a runner (internal/harness/proc/lifeline.go), started by the runner
		// itself: not a command.
		os.Exit(proc.KeeperMain(os.Stdin, os.Stderr))
	}
	if self, err := os.Executable(); err == nil {
		proc.SetKeeper(self, proc.KeeperCommand) // started with the first child, if any
	}
	// Caught, not fatal: cli.Main reads them once and hands every command a context the first
	// cancels (exit 130 at the command's next step, nothing half-written).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// A reader that goes away (`flowtest run | grep -m1 …`) must not kill the runner mid-scenario
	// with SIGPIPE and skip its cleanup: console writes then fail with EPIPE instead, and the run
	// ends as it would, its archive written and its children stopped.
	signal.Ignore(syscall.SIGPIPE)
	stop := startProfiles()
	code := cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, sigs)
	stop()
	os.Exit(code)
}
