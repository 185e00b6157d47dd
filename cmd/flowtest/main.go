// Command flowtest is the acceptance-test runner for kSQL-FlowNet.
//
//	flowtest run    [--target sandbox|live] [--tags EXPR] [--dry-run] …   run scenarios
//	flowtest list                                                          the 43 scenarios in run order
//	flowtest check  [--target sandbox|live] [--tags EXPR]                  preflight only
//	flowtest steps  [--features DIR] [--unused]                            step definitions and their use
//	flowtest archive verify DIR                                            scan an archive for leaks
//	flowtest defects [--only a,b] [--fast]                                 planted defects must be caught
//
// Exit codes: 0 all selected scenarios passed (or the command succeeded); 1 a scenario
// failed (or a leak was found); 2 refused (usage, preflight); 130 interrupted.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ksqlflow/flowtest/runner"
)

// Version is the runner version written into run.json (set with -ldflags at release).
var Version = "0.1.0-dev"

const usage = `usage: flowtest <command> [flags]

commands:
  run              run the selected acceptance scenarios (default: all, on the sandbox)
  list             list the 43 acceptance scenarios in run order
  check            preflight only: every safety check with PASS/FAIL
  steps            step definitions (regexp, handler, file:line) and the scenarios using them
  archive verify   scan a results archive for secrets and raw app ids
  defects          prove each scenario can fail: run it against planted-defect sandboxes
  version          print the runner version

Run "flowtest <command> -h" for the flags of a command.
`

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr, sigs))
}

// Main runs one flowtest command and returns its exit code.
func Main(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return runner.ExitRefused
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stdout, stderr, sigs)
	case "list":
		return cmdList(args[1:], stdout, stderr)
	case "steps": // step definitions, where they are and which scenarios use them (steps.go)
		return cmdSteps(args[1:], stdout, stderr)
	case "check":
		return cmdCheck(args[1:], stdout, stderr)
	case "defects": // planted defects: prove each scenario can fail (defects.go)
		return cmdDefects(args[1:], stdout, stderr, sigs)
	case "archive":
		if len(args) > 1 && args[1] == "verify" {
			return cmdVerify(args[2:], stdout, stderr)
		}
		fmt.Fprintf(stderr, "flowtest archive: unknown subcommand (want: archive verify DIR)\n")
		return runner.ExitRefused
	case "version", "--version":
		fmt.Fprintf(stdout, "flowtest %s\n", Version)
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "flowtest: unknown command %q\n%s", args[0], usage)
		return runner.ExitRefused
	}
}
