// Package cli is flowtest's command line: the command table (name, usage line, help, flags,
// run function), the command tree made from it (tree.go), from which `flowtest help`,
// `flowtest <command> --help`, completion and the README's command list come, and the
// mapping of domain errors to exit codes. The work of each command is in the packages it
// calls.
//
// The tree is github.com/spf13/cobra's (with pflag): the Go ecosystem's usual command line,
// chosen because it gives what a home-made table over the flag package lacked or did by hand
// (issue 43): a flag set per command that refuses every flag the command does not declare;
// flags in any position, also after arguments (`archive pack DIR --force`), with "--" ending
// them; help for the group words (`flowtest archive`, `flowtest help gate run`); did-you-mean
// for a mistyped command; shell completion (`flowtest completion bash`); and no lookup, group
// or help code of our own. The flags stay declared once on a Go flag.FlagSet (flags.go's
// declarations and each row's bind), handed to pflag with their values shared, so pflag
// parses each exactly once; a command gets the positional arguments and the flags given
// (invocation.uses) already parsed.
//
// Conventions: long flags are --name (a single dash, -name, as Go's flag package took it, is
// read as --name: scripts keep working); the only short flag is -h (one spelling per flag
// keeps scripts and docs alike); a flag given twice is refused unless repeatable (--format,
// --only).
//
// Exit codes (runner.Exit*, README "Set-up"): 0 all selected scenarios that ran passed and at
// least one ran (or the command succeeded); 1 a scenario failed (or a leak was found); 2
// refused before anything ran (an unknown command or flag, a wrong flag value, a malformed
// input file, an empty selection, preflight); 3 nothing ran (every selected scenario was not
// run: not implemented, or another platform); 130 interrupted. A blocked scenario exits 1
// like a failed one. `gate run` exits by its verdict: 0 PASS, 1 FAIL, 3 INCOMPLETE (and 2,
// 130 as above); `evidence` exits 0 only when every row is pass.
package cli

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ksqlflow/flowtest/internal/app/ksqlwrap"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/steps/csv/wrapmode"
)

// runFunc runs a command with its positional arguments (its flags are parsed, in
// invocation.uses and the values they are bound to) and returns its exit code.
type runFunc func(inv invocation, args []string) int

// command is one row of the command table. name is one word or two (`archive verify`: a
// group word and its command); usage is what follows `flowtest` in the usage line; short is
// the line of `flowtest help`; long, when set, is printed by `flowtest <command> --help`
// below short.
//
// flags declares the command's flags on a set and returns the command bound to their
// values; the tree parses the command line into them before it runs the command, and
// `flowtest <command> --help` and `flowtest help <command>` print them. A command without
// flags has run instead.
type command struct {
	name, usage, short, long string
	hidden                   bool // internal: neither in `flowtest help` nor in the README
	rawArgs                  bool // no flag parsing: run gets the arguments as they are
	flags                    func(fs *flag.FlagSet) runFunc
	run                      runFunc
}

// flagsOf is the flags of a row whose command takes its flag values as an O: a fresh O bound
// to the row's set, and cmd over it.
func flagsOf[O any, P interface {
	*O
	bind(fs *flag.FlagSet)
}](cmd func(inv invocation, f P, args []string) int) func(fs *flag.FlagSet) runFunc {
	return func(fs *flag.FlagSet) runFunc {
		f := P(new(O))
		f.bind(fs)
		return func(inv invocation, args []string) int { return cmd(inv, f, args) }
	}
}

// commands is the table, in the order `flowtest help` lists it.
var commands []command

func init() {
	commands = []command{
		{name: "run", usage: "run [--target sandbox|live] [--tags EXPR] [--dry-run] [--fail-fast] [--last-failed] [flags]",
			short: "run the selected acceptance scenarios (default: all, on the sandbox)",
			flags: flagsOf(cmdRun)},
		{name: "list", usage: "list [--tags EXPR] [--json]",
			short: "list the scenarios in run order: the acceptance scenarios, then the extended series",
			flags: flagsOf(cmdList)},
		{name: "check", usage: "check [--target sandbox|live] [--tags EXPR] [--json]",
			short: "preflight only: every safety check with PASS/FAIL",
			flags: flagsOf(cmdCheck)},
		{name: "steps", usage: "steps [--features DIR] [--unused] [--json]",
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
		{name: "explore", usage: "explore <scenario id> [--schedules N | --time D] [--strategy random|pct|dfs] [--depth d] [--bound b] [--seed S] [--replay FILE] [--json] [run flags]",
			short: "run a race scenario under many controlled orders of its writes and check the product's invariants in each",
			long:  "Holds every kintone write of the scenario's explore processes (features/manifest.yaml) and releases one at a time at quiescence, in an order the strategy chooses; a violating schedule is shrunk and written as schedules/<n>.json for --replay. Its own flags are --schedules, --time, --strategy, --depth, --bound, --seed, --replay, --shrink-runs and --json (the summary as one JSON object on stdout); the others are run flags.",
			flags: flagsOf(cmdExplore)},
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
		// The CSV steps' kSQL-Flow launcher (internal/app/ksqlwrap): started by FlowNet, not by
		// people; its flags are the wrapper's own contract with the CSV steps, which it parses.
		{name: wrapmode.Command, usage: wrapmode.Command + " --mode MODE -- LAUNCHER ARGS…", hidden: true, rawArgs: true,
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

// Main runs one flowtest command and returns its exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	code := 0
	root := tree(commands, invocation{stdin: stdin, stdout: stdout, stderr: stderr, line: append([]string{"flowtest"}, args...)}, sigs, &code)
	if len(args) == 0 {
		fmt.Fprint(stderr, root.UsageString())
		return runner.ExitRefused
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	if !execute(root, args, stderr) {
		return runner.ExitRefused
	}
	return code
}

// execute runs the command args name in root's tree; false when it refused the command
// line (an unknown command or flag, a flag given twice, arguments a command of cobra's
// refuses), printed on stderr.
func execute(root *cobra.Command, args []string, stderr io.Writer) bool {
	root.SetArgs(args)
	if args[0] != cobra.ShellCompRequestCmd && args[0] != cobra.ShellCompNoDescRequestCmd { // completion's words are cobra's
		c, _, err := root.Find(args)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest: %v\n", unknownCommand(root, firstWord(args)))
			return false
		}
		root.SetArgs(longFlags(c, args))
	}
	if c, err := root.ExecuteC(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.CommandPath(), err)
		return false
	}
	return true
}

// writeReadmeCommands is the README's command list (section "Commands"): every command of
// the tree that help lists, checked against the README by a test so that the two cannot
// drift.
func writeReadmeCommands(w io.Writer) {
	fmt.Fprint(w, "| command | what it does |\n| --- | --- |\n")
	var rows func(c *cobra.Command)
	rows = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			switch {
			case !sub.IsAvailableCommand() && sub.Name() != "help":
			case sub.HasSubCommands():
				rows(sub)
			default:
				fmt.Fprintf(w, "| `%s` | %s |\n", sub.UseLine(), sub.Short)
			}
		}
	}
	rows(tree(commands, invocation{}, nil, new(int)))
}
