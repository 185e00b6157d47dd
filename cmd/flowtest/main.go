// Command flowtest is the acceptance-test runner for kSQL-FlowNet.
//
//	flowtest run    [--target sandbox|live] [--tags EXPR] [--dry-run] …   run scenarios
//	flowtest list                                                          the 43 scenarios in run order
//	flowtest check  [--target sandbox|live] [--tags EXPR]                  preflight only
//	flowtest steps  [--features DIR] [--unused]                            step definitions and their use
//	flowtest archive verify DIR|PACK                                       an archive is whole and has no leaks (a pack: and its SHA256SUMS)
//	flowtest archive pack [--force] DIR                                    seal an archive into DIR.tar.gz with SHA256SUMS
//	flowtest sweep  [--target sandbox|live] [--older-than 1h] [--delete]   leftovers of dead runs on the target
//	flowtest gate show|run <gate> …                                        release gates (features/gates/<gate>.yaml)
//	flowtest evidence --before A --after B                                 the before/after evidence rows of a fix
//	flowtest defects [--only a,b] [--fast]                                 planted defects must be caught
//
// Exit codes: 0 all selected scenarios that ran passed and at least one ran (or the command
// succeeded); 1 a scenario failed (or a leak was found); 2 refused before anything ran (a
// wrong flag value, a malformed input file, an empty selection, preflight); 3 nothing ran
// (every selected scenario was not run: not implemented, or another platform); 130
// interrupted. A blocked scenario exits 1 like a failed one. `gate run` exits by its verdict:
// 0 PASS, 1 FAIL, 3 INCOMPLETE (and 2, 130 as above); `evidence` exits 0 only when every row
// is pass.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ksqlflow/flowtest/harness/proc"
	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/steps"
)

// Version is the runner version written into run.json (set with -ldflags at release).
var Version = "0.1.0-dev"

const usage = `usage: flowtest <command> [flags]

commands:
  run              run the selected acceptance scenarios (default: all, on the sandbox)
  list             list the 43 acceptance scenarios in run order
  check            preflight only: every safety check with PASS/FAIL
  steps            step definitions (regexp, handler, file:line) and the scenarios using them
  archive verify   check a results archive (folder or pack) is whole and holds no secrets or raw app ids; a pack also against its SHA256SUMS
  archive pack     seal a results archive into one .tar.gz with a SHA256SUMS manifest; prints its sha256 (never replaces a pack without --force)
  sweep            list (--delete: remove) what dead runs left on the target: scopes of no live runner, older than --older-than
  gate show        the scenarios a release gate requires, in run order (features/gates/<gate>.yaml)
  gate run         run a release gate: scope by carry-over rules and the SUT diff, then a gate record
  evidence         before/after evidence rows of a fix from two archives (--before A --after B)
  rehearse         the live path without a tenant: run --target live against stand-alone emulators (--latency, --shards N)
  defects          prove each scenario can fail: run it against planted-defect sandboxes
  version          print the runner version

Run "flowtest <command> -h" for the flags of a command.
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == proc.KeeperCommand {
		// The process keeper of a runner (harness/proc/lifeline.go), started by the runner
		// itself: not a command.
		os.Exit(proc.KeeperMain(os.Stdin, os.Stderr))
	}
	if self, err := os.Executable(); err == nil {
		proc.SetKeeper(self, proc.KeeperCommand) // started with the first child, if any
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// A reader that goes away (`flowtest run | grep -m1 …`) must not kill the runner mid-scenario
	// with SIGPIPE and skip its cleanup: console writes then fail with EPIPE instead, and the run
	// ends as it would, its archive written and its children stopped.
	signal.Ignore(syscall.SIGPIPE)
	stop := startProfiles()
	code := Main(os.Args[1:], os.Stdout, os.Stderr, sigs)
	stop()
	os.Exit(code)
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
	case "archive": // archive verify, archive pack (archive.go)
		return cmdArchive(args[1:], stdout, stderr)
	case "gate": // release gates (gate.go)
		return cmdGate(args[1:], stdout, stderr, sigs)
	case "rehearse": // the live path against stand-alone emulators (rehearse.go)
		return cmdRehearse(args[1:], stdout, stderr, sigs)
	case "sweep": // leftovers of dead runs on the target (sweep.go)
		return cmdSweep(args[1:], stdout, stderr)
	case "evidence": // before/after evidence of a fix (evidence.go)
		return cmdEvidence(args[1:], stdout, stderr)
	case steps.KsqlFlowWrapperCommand: // internal, not in usage: the CSV steps' kSQL-Flow launcher (ksqlwrap.go)
		return cmdKsqlFlowWrapper(args[1:], os.Stdin, stdout, stderr, sigs)
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
