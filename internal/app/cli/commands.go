// Package cli is flowtest's command line: the command table (name, usage line, help, flags,
// run function) from which `flowtest help`, `flowtest <command> -h` and the README's command list
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

	"github.com/ksqlflow/flowtest/internal/app/ksqlwrap"
	"github.com/ksqlflow/flowtest/internal/base/interrupt"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/steps/csv/wrapmode"
)

// runFunc runs a command with the arguments after its name and returns its exit code.
type runFunc func(inv invocation, args []string) int

// command is one row of the command table. name is one word or two (`archive verify`); usage
// is what follows `flowtest` in the usage line; short is the line of `flowtest help`; long,
// when set, is printed by `flowtest <command> -h` above the flags.
//
// flags declares the command's flags on the set Main makes for it and returns the command
// bound to their values, which parses its arguments into that set; `flowtest <command> -h`
// and `flowtest help <command>` print the set. A command without flags has run instead.
type command struct {
	name, usage, short, long string
	hidden                   bool // internal: neither in `flowtest help` nor in the README
	flags                    func(fs *flag.FlagSet) runFunc
	run                      runFunc
}

// flagsOf is the flags of a row whose command takes its flag values as an O: a fresh O bound
// to the row's set, and cmd over it.
func flagsOf[O any, P interface {
	*O
	bind(fs *flag.FlagSet)
}](cmd func(inv invocation, f P, fs *flag.FlagSet, args []string) int) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		f := P(new(O))
		f.bind(fs)
		return func(inv invocation, args []string) int { return cmd(inv, f, fs, args) }
	}
}

// commands is the table, in the order `flowtest help` lists it.
var commands []command

func init() {
	commands = []command{
		{name: "run", usage: "run [--target sandbox|live] [--tags EXPR] [--dry-run] [flags]",
			short: "run the selected acceptance scenarios (default: all, on the sandbox)",
			flags: flagsOf(cmdRun)},
		{name: "list", usage: "list [--tags EXPR]",
			short: "list the scenarios in run order: the acceptance scenarios, then the extended series",
			flags: flagsOf(cmdList)},
		{name: "check", usage: "check [--target sandbox|live] [--tags EXPR]",
			short: "preflight only: every safety check with PASS/FAIL",
			flags: flagsOf(cmdCheck)},
		{name: "steps", usage: "steps [--features DIR] [--unused]",
			short: "step definitions (regexp, handler, file:line) and the scenarios using them",
			flags: flagsOf(cmdSteps)},
		{name: "archive verify", usage: "archive verify [--env-file F] [--sha256 HEX] <archive dir | pack.tar.gz>",
			short: "check a results archive (folder or pack) is whole and holds no secrets or raw app ids; a pack also against its SHA256SUMS",
			flags: flagsOf(cmdVerify)},
		{name: "archive pack", usage: "archive pack [--out FILE.tar.gz] [--force] <archive dir>",
			short: "seal a results archive into one .tar.gz with a SHA256SUMS manifest; prints its sha256 (never replaces a pack without --force)",
			flags: flagsOf(cmdPack)},
		{name: "archive merge", usage: "archive merge [--out DIR] <shard archive> <shard archive> …",
			short: "merge the archives of the shards of one run (--shard K/N) into one archive",
			flags: flagsOf(cmdMerge)},
		{name: "archive diff", usage: "archive diff [--known FILE] <archive A> <archive B>",
			short: "compare the normalised record histories and FlowNet outputs of two archives scenario by scenario (real vs reference FlowNet); exit 1 on a difference --known does not explain",
			flags: flagsOf(cmdDiff)},
		{name: "sweep", usage: "sweep [--target sandbox|live] [--older-than 1h] [--delete]",
			short: "list (--delete: remove) what dead runs left on the target: scopes of no live runner, older than --older-than",
			flags: flagsOf(cmdSweep)},
		{name: "gate show", usage: "gate show [--all] <gate>",
			short: "the scenarios a release gate requires, in run order (features/gates/<gate>.yaml)",
			flags: flagsOf(cmdGateShow)},
		{name: "gate run", usage: "gate run <gate> --sut-commit C --sut-repo DIR [--since-archive A] [run flags]",
			short: "run a release gate: scope by carry-over rules and the SUT diff, then a gate record",
			flags: flagsOf(cmdGateRun)},
		{name: "evidence", usage: "evidence --before <archive> --after <archive> [--json] [--out test-evidence.md]",
			short: "before/after evidence rows of a fix from two archives",
			flags: flagsOf(cmdEvidence)},
		{name: "rehearse", usage: "rehearse [--latency D] [--shards N]",
			short: "the live path without a tenant: run --target live against stand-alone emulators",
			long:  "The run flags among its flags are forwarded to each tenant's live run.",
			flags: flagsOf(cmdRehearse)},
		{name: "explore", usage: "explore <scenario id> [--schedules N | --time D] [--strategy random|pct|dfs] [--depth d] [--bound b] [--seed S] [--replay FILE] [run flags]",
			short: "run a race scenario under many controlled orders of its writes and check the product's invariants in each",
			long:  "Holds every kintone write of the scenario's explore processes (features/manifest.yaml) and releases one at a time at quiescence, in an order the strategy chooses; a violating schedule is shrunk and written as schedules/<n>.json for --replay. Its own flags are --schedules, --time, --strategy, --depth, --bound, --seed, --replay and --shrink-runs; the others are run flags.",
			flags: flagsOf(exploreCommand)},
		{name: "defects", usage: "defects [--only a,b] [--fast]",
			short: "prove each scenario can fail: run it against planted-defect sandboxes",
			long:  "Builds each planted defect of sandbox/defect/defects.yaml into a broken flowsandbox and shows that its scenarios catch it.",
			flags: flagsOf(cmdDefects)},
		{name: "coverage", usage: "coverage [--archive DIR] [--json]",
			short: "which scenarios' assertions read each record field, output and order the product writes, and what none reads",
			long:  "Reads the newest full-run archive under --out (or --archive) and docs/coverage.md; exits 1 when a subject no assertion reads has no reason there, or an assertion names an unknown subject.",
			flags: flagsOf(cmdCoverage)},
		{name: "version", usage: "version", short: "print the runner version and the commit it was built from",
			run: func(inv invocation, _ []string) int { fmt.Fprintln(inv.stdout, versionLine(build())); return 0 }},
		{name: "help", usage: "help [command]", short: "this list, or the usage and flags of one command",
			run: cmdHelp},
		// The CSV steps' kSQL-Flow launcher (internal/app/ksqlwrap): started by FlowNet, not by
		// people; its flags are the wrapper's own contract with the CSV steps.
		{name: wrapmode.Command, usage: wrapmode.Command + " --mode MODE -- LAUNCHER ARGS…", hidden: true,
			short: "the CSV steps' kSQL-Flow wrapper",
			run: func(inv invocation, a []string) int {
				code, err := ksqlwrap.Run(a, inv.stdin, inv.stdout, inv.stderr, inv.stop, inv.now)
				if err != nil {
					return exitFor(inv.stderr, wrapmode.Command, err)
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
		return unknownCommand(stderr, "flowtest", args)
	}
	// The process's one reader of its signals; every command gets its contexts.
	stop, now, release := interrupt.Watch(sigs)
	defer release()
	inv := invocation{stdin: stdin, stdout: stdout, stderr: stderr, stop: stop, now: now, usage: c.usage, help: c.writeHelp}
	if c.flags == nil {
		return c.run(inv, rest)
	}
	fs, run := c.flagSet()
	fs.SetOutput(stderr)
	return run(inv, rest)
}

// unknownCommand refuses args that name no command: the sub-commands of a group word, else
// the usage.
func unknownCommand(stderr io.Writer, who string, args []string) int {
	if subs := group(args[0]); subs != nil {
		fmt.Fprintf(stderr, "%s %s: unknown subcommand (want one of: %s)\n", who, args[0], strings.Join(subs, ", "))
		return runner.ExitRefused
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n", who, args[0])
	writeUsage(stderr)
	return runner.ExitRefused
}

// cmdHelp is `flowtest help [command]`: the list, or one command's help as its -h prints it.
func cmdHelp(inv invocation, args []string) int {
	if len(args) == 0 {
		writeUsage(inv.stdout)
		return 0
	}
	c, rest := lookup(args)
	if c == nil || len(rest) > 0 {
		return unknownCommand(inv.stderr, "flowtest help", args)
	}
	c.writeHelp(inv.stdout)
	return 0
}

// flagSet is a fresh set of the command's flags, with the command bound to it; its -h is the
// command's help.
func (c *command) flagSet() (*flag.FlagSet, runFunc) {
	fs := newFlagSet(c.name, c.writeHelp)
	return fs, c.flags(fs)
}

// writeHelp is `flowtest <command> -h`: the usage line and help of the command's row, then
// the flags its row declares.
func (c *command) writeHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: flowtest %s\n\n%s\n", c.usage, c.short)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", c.long)
	}
	if c.flags == nil {
		return
	}
	fs, _ := c.flagSet()
	fs.SetOutput(w)
	fmt.Fprint(w, "\nflags:\n")
	fs.PrintDefaults()
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
