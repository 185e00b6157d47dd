// Package cli is flowtest's command line: the command table (name, usage line, help, run
// function) from which `flowtest help`, `flowtest <command> -h` and the README's command list
// come, flag parsing, and the mapping of domain errors to exit codes. The work of each command
// is in the packages it calls.
//
// Exit codes (runner.Exit*, README "Set-up"): 0 all selected scenarios that ran passed and at
// least one ran (or the command succeeded); 1 a scenario failed (or a leak was found); 2
// refused before anything ran (a wrong flag value, a malformed input file, an empty
// selection, preflight); 3 nothing ran (every selected scenario was not run: not implemented,
// or another platform); 130 interrupted. A blocked scenario exits 1 like a failed one. `gate
// run` exits by its verdict: 0 PASS, 1 FAIL, 3 INCOMPLETE (and 2, 130 as above); `evidence`
// exits 0 only when every row is pass.
package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ksqlflow/flowtest/internal/ksqlwrap"
	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/steps"
)

// Version is the runner version written into run.json (set with
// -ldflags "-X github.com/ksqlflow/flowtest/internal/cli.Version=…" at release).
var Version = "0.1.0-dev"

// invocation is what a command runs with: the process's streams and its signals.
type invocation struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	sigs           <-chan os.Signal
}

// command is one row of the command table. name is one word or two (`archive verify`); usage
// is what follows `flowtest` in the usage line; short is the line of `flowtest help`; long,
// when set, is printed by `flowtest <command> -h` above the flags.
type command struct {
	name, usage, short, long string
	hidden                   bool // internal: neither in `flowtest help` nor in the README
	run                      func(inv invocation, args []string) int
}

// commands is the table, in the order `flowtest help` lists it.
var commands []command

func init() {
	commands = []command{
		{name: "run", usage: "run [--target sandbox|live] [--tags EXPR] [--dry-run] [flags]",
			short: "run the selected acceptance scenarios (default: all, on the sandbox)",
			run:   func(inv invocation, a []string) int { return cmdRun(a, inv.stdout, inv.stderr, inv.sigs) }},
		{name: "list", usage: "list [--tags EXPR]",
			short: "list the 43 acceptance scenarios in run order",
			run:   func(inv invocation, a []string) int { return cmdList(a, inv.stdout, inv.stderr) }},
		{name: "check", usage: "check [--target sandbox|live] [--tags EXPR]",
			short: "preflight only: every safety check with PASS/FAIL",
			run:   func(inv invocation, a []string) int { return cmdCheck(a, inv.stdout, inv.stderr) }},
		{name: "steps", usage: "steps [--features DIR] [--unused]",
			short: "step definitions (regexp, handler, file:line) and the scenarios using them",
			run:   func(inv invocation, a []string) int { return cmdSteps(a, inv.stdout, inv.stderr) }},
		{name: "archive verify", usage: "archive verify DIR|PACK",
			short: "check a results archive (folder or pack) is whole and holds no secrets or raw app ids; a pack also against its SHA256SUMS",
			run:   func(inv invocation, a []string) int { return cmdVerify(a, inv.stdout, inv.stderr) }},
		{name: "archive pack", usage: "archive pack [--force] DIR",
			short: "seal a results archive into one .tar.gz with a SHA256SUMS manifest; prints its sha256 (never replaces a pack without --force)",
			run:   func(inv invocation, a []string) int { return cmdPack(a, inv.stdout, inv.stderr) }},
		{name: "archive merge", usage: "archive merge [--out DIR] ARCHIVE ARCHIVE…",
			short: "merge the archives of the shards of one run (--shard K/N) into one archive",
			run:   func(inv invocation, a []string) int { return cmdMerge(a, inv.stdout, inv.stderr) }},
		{name: "sweep", usage: "sweep [--target sandbox|live] [--older-than 1h] [--delete]",
			short: "list (--delete: remove) what dead runs left on the target: scopes of no live runner, older than --older-than",
			run:   func(inv invocation, a []string) int { return cmdSweep(a, inv.stdout, inv.stderr) }},
		{name: "gate show", usage: "gate show <gate> [--all]",
			short: "the scenarios a release gate requires, in run order (features/gates/<gate>.yaml)",
			run:   func(inv invocation, a []string) int { return cmdGateShow(a, inv.stdout, inv.stderr) }},
		{name: "gate run", usage: "gate run <gate> --sut-commit C --sut-repo DIR [--since-archive A] [run flags]",
			short: "run a release gate: scope by carry-over rules and the SUT diff, then a gate record",
			run:   func(inv invocation, a []string) int { return cmdGateRun(a, inv.stdout, inv.stderr, inv.sigs) }},
		{name: "evidence", usage: "evidence --before A --after B",
			short: "before/after evidence rows of a fix from two archives",
			run:   func(inv invocation, a []string) int { return cmdEvidence(a, inv.stdout, inv.stderr) }},
		{name: "rehearse", usage: "rehearse [--latency D] [--shards N]",
			short: "the live path without a tenant: run --target live against stand-alone emulators",
			run:   func(inv invocation, a []string) int { return cmdRehearse(a, inv.stdout, inv.stderr, inv.sigs) }},
		{name: "explore", usage: "explore <scenario id> [--schedules N | --time D] [--strategy random|pct|dfs] [--depth d] [--bound b] [--seed S] [--replay FILE] [run flags]",
			short: "run a race scenario under many controlled orders of its writes and check the product's invariants in each",
			long:  "Holds every kintone write of the scenario's explore processes (features/manifest.yaml) and releases one at a time at quiescence, in an order the strategy chooses; a violating schedule is shrunk and written as schedules/<n>.json for --replay. Its own flags: --schedules N (default 50) or --time D, --strategy (random), --depth (pct, 3), --bound (dfs preemptions, 2), --seed (1), --replay FILE, --shrink-runs (12); the run flags below follow.",
			run:   func(inv invocation, a []string) int { return cmdExplore(a, inv.stdout, inv.stderr, inv.sigs) }},
		{name: "defects", usage: "defects [--only a,b] [--fast]",
			short: "prove each scenario can fail: run it against planted-defect sandboxes",
			long:  "Builds each planted defect of sandbox/defect/defects.yaml into a broken flowsandbox and shows that its scenarios catch it.",
			run:   func(inv invocation, a []string) int { return cmdDefects(a, inv.stdout, inv.stderr, inv.sigs) }},
		{name: "version", usage: "version", short: "print the runner version",
			run: func(inv invocation, _ []string) int { fmt.Fprintf(inv.stdout, "flowtest %s\n", Version); return 0 }},
		{name: "help", usage: "help", short: "this list",
			run: func(inv invocation, _ []string) int { writeUsage(inv.stdout); return 0 }},
		// The CSV steps' kSQL-Flow launcher (internal/ksqlwrap): started by FlowNet, not by people.
		{name: steps.KsqlFlowWrapperCommand, usage: steps.KsqlFlowWrapperCommand + " --mode MODE -- LAUNCHER ARGS…", hidden: true,
			short: "the CSV steps' kSQL-Flow wrapper",
			run: func(inv invocation, a []string) int {
				code, err := ksqlwrap.Run(a, inv.stdin, inv.stdout, inv.stderr, inv.sigs)
				if err != nil {
					return exitFor(inv.stderr, steps.KsqlFlowWrapperCommand, err)
				}
				return code
			}},
	}
}

// lookup finds the command args start with: a two-word name (`archive verify`) before a
// one-word one. It returns the command and the arguments after its name.
func lookup(args []string) (*command, []string) {
	if len(args) > 1 {
		for i := range commands {
			if commands[i].name == args[0]+" "+args[1] {
				return &commands[i], args[2:]
			}
		}
	}
	for i := range commands {
		if commands[i].name == args[0] {
			return &commands[i], args[1:]
		}
	}
	return nil, nil
}

// commandNamed is the row of a command name as parseFlags knows it.
func commandNamed(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// group lists the sub-commands of a first word (`archive`, `gate`), nil if it names none.
func group(word string) []string {
	var subs []string
	for _, c := range commands {
		if first, sub, ok := strings.Cut(c.name, " "); ok && first == word {
			subs = append(subs, sub)
		}
	}
	return subs
}

// writeUsage is `flowtest help`: every command of the table but the hidden ones.
func writeUsage(w io.Writer) {
	fmt.Fprint(w, "usage: flowtest <command> [flags]\n\ncommands:\n")
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(w, "  %-16s %s\n", c.name, c.short)
		}
	}
	fmt.Fprint(w, "\nRun \"flowtest <command> -h\" for the flags of a command.\n")
}

// Main runs one flowtest command and returns its exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	if len(args) == 0 {
		writeUsage(stderr)
		return runner.ExitRefused
	}
	switch args[0] {
	case "-h", "--help":
		args = []string{"help"}
	case "--version":
		args = []string{"version"}
	}
	c, rest := lookup(args)
	if c == nil {
		if subs := group(args[0]); subs != nil {
			fmt.Fprintf(stderr, "flowtest %s: unknown subcommand (want one of: %s)\n", args[0], strings.Join(subs, ", "))
			return runner.ExitRefused
		}
		fmt.Fprintf(stderr, "flowtest: unknown command %q\n", args[0])
		writeUsage(stderr)
		return runner.ExitRefused
	}
	return c.run(invocation{stdin: stdin, stdout: stdout, stderr: stderr, sigs: sigs}, rest)
}

// helpFor makes fset's -h output `flowtest <command> -h`: the usage line and help of the
// command's row, then the flags.
func helpFor(fset *flag.FlagSet, name string) func() {
	return func() {
		w := fset.Output()
		if c := commandNamed(name); c != nil {
			fmt.Fprintf(w, "usage: flowtest %s\n\n%s\n", c.usage, c.short)
			if c.long != "" {
				fmt.Fprintf(w, "\n%s\n", c.long)
			}
		}
		fmt.Fprint(w, "\nflags:\n")
		fset.PrintDefaults()
	}
}

// writeReadmeCommands is the README's command list (section "Commands"), checked against the
// table by a test so that the two cannot drift.
func writeReadmeCommands(w io.Writer) {
	fmt.Fprint(w, "| command | what it does |\n| --- | --- |\n")
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(w, "| `flowtest %s` | %s |\n", c.usage, c.short)
		}
	}
}
