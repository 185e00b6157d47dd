package flownet

import (
	"fmt"
	"io"
	"os"
	"strings"
)

const version = "0.1.0-sandbox"

// commands maps a command name to its implementation.
var commands = map[string]func(c *cli, args []string) int{
	"validate":             (*cli).validate,
	"plan":                 (*cli).plan,
	"run-network":          (*cli).runNetwork,
	"status":               (*cli).status,
	"cancel-run":           (*cli).cancelRun,
	"archive-run":          (*cli).archiveRun,
	"force-unlock-network": (*cli).forceUnlockNetwork,
	"resolve-node":         (*cli).resolveNode,
	"record-job-unlock":    (*cli).recordJobUnlock,
	"poll-requests":        (*cli).pollRequests,
}

const usage = `Usage: ksql-flownet <command> [options]

Commands:
  validate <network>                    validate a network definition (read-only)
  plan <network> [--business-key <key>] [--scheduled-for <ts>]
                                        print the business key and execution order
  run-network <network> [options]       ensure a Run and execute it serially
      [--business-key <key>] [--scheduled-for <ts>] [--resume] [--resume-run <run_id>]
      [--rerun-from <node_id>] [--json] [--ksql-flow-bin <path>]
      [--ksql-flow-config <path>] [--ksql-flow-workdir <dir>]
  status <network_id> --profile <p> [--run-id <id> | --business-key <k>] [--json]
  cancel-run --run-id <id> [--release] --reason-file <path>
                                        request (or release) a hold of a Run
  force-unlock-network <network_id> --profile <p> --expected-owner-invocation-id <id>
      --reason-file <path> --evidence-ref <ref> --stop-confirmed-by <who>
      --stop-evidence-ref <ref> --stop-method manual|local_pid|cloud_run_job_execution
                                        release a stale Network lock whose owner stopped
  resolve-node --run-id <id> --node-id <id> --to SUCCESS|FAILED|CANCELLED
      --reason-file <path> --evidence-ref <ref> --stop-confirmed-by <who>
      --stop-evidence-ref <ref> [--approved-by <who>] [--manual-completion | --compensation]
                                        settle an UNKNOWN or non-idempotent FAILED node
  record-job-unlock --result-file <path> --run-id <id> --node-id <id> --reason-file <path>
      --evidence-ref <ref> --stop-confirmed-by <who>
                                        audit a kSQL-Flow job-lock recovery (LOCK_RECOVERY_RESULT)
  archive-run <network> --run-id <id> --reason-file <path> [--profile <p>]
                                        archive (CLOSE) a FAILED or CANCELLED Run
  poll-requests [--check]               claim and run operation requests once (cron)

Options:
  -h, --help     show this help
  -V, --version  show the version
`

// Main is the entry point of `flowsandbox flownet …`.
func Main(args []string, stdout, stderr io.Writer) int {
	c := newCLI(os.Environ(), stdout, stderr)
	if exe, err := os.Executable(); err == nil {
		c.self = []string{exe, "flownet"} // flowsandbox flownet <command>
	}
	return c.dispatch(args)
}

func (c *cli) dispatch(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usage)
		return 1
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(c.stdout, usage)
		return 0
	case "-V", "--version":
		fmt.Fprintln(c.stdout, version)
		return 0
	}
	run, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(c.stderr, "Error: unknown command '%s'.\n(run with --help for the list of commands)\n", args[0])
		return 1
	}
	return run(c, args[1:])
}

// validate is `validate <network>`: read-only; all errors listed.
func (c *cli) validate(args []string) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return c.argumentError("validate", []string{"exactly one <network> path is required"})
	}
	_, errs := LoadNetwork(args[0])
	if len(errs) > 0 {
		return c.networkInvalid(errs)
	}
	fmt.Fprintf(c.stdout, "Valid network definition: %s\n", args[0])
	return 0
}
