package cli

// The command tree: the table's rows (commands.go) as cobra commands, the group words
// (archive, gate), help and completion; the one parse of each command's flags and the
// refusals of a command line that names no command or a flag the command does not take.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ksqlflow/flowtest/internal/base/flagcheck"
	"github.com/ksqlflow/flowtest/internal/base/interrupt"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// The help lists the commands in the table's order, which groups the run path first.
func init() { cobra.EnableCommandSorting = false }

// tree is the command tree of one Main over the rows of a table (commands): base is the
// invocation every command starts from (streams, command line), sigs the process's signals
// and code where the command that runs leaves its exit code. A tree parses once: Main makes
// one per call.
func tree(rows []command, base invocation, sigs <-chan os.Signal, code *int) *cobra.Command {
	root := &cobra.Command{
		Use:           "flowtest",
		Short:         "flowtest runs kSQL-FlowNet's acceptance scenarios on the sandbox or a live tenant and archives redacted results",
		SilenceErrors: true, // Main prints every refusal in one form
		SilenceUsage:  true,
	}
	root.SetIn(base.stdin)
	root.SetOut(base.stdout)
	root.SetErr(base.stderr)
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.DisableDefaultCmd = true // ours is one row, with the shells as its argument
	for i := range rows {
		c := &rows[i]
		parent := root
		if word, _, ok := strings.Cut(c.name, " "); ok {
			parent = groupOf(root, word, base.stderr, code)
		}
		parent.AddCommand(c.cobra(base, sigs, code))
	}
	for _, g := range root.Commands() {
		if g.HasSubCommands() {
			var subs []string
			for _, sub := range g.Commands() {
				subs = append(subs, sub.Name())
			}
			g.Short = "the " + g.Name() + " commands: " + strings.Join(subs, ", ")
		}
	}
	// A group runs only to refuse a missing or unknown command: its usage is its commands.
	usage := strings.Replace(root.UsageTemplate(), "{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1)
	root.SetUsageTemplate(usage)
	root.AddCommand(completionCommand(root))
	help := helpCommand(root)
	root.AddCommand(help)
	root.SetHelpCommand(help)
	return root
}

// cobra is the row as a command: its flags declared on a Go flag set (flags.go's
// declarations) and handed to pflag, which parses them once, in any position.
func (c *command) cobra(base invocation, sigs <-chan os.Signal, code *int) *cobra.Command {
	long := c.short
	if c.long != "" {
		long += "\n\n" + c.long
	}
	use := c.usage
	if word, _, grouped := strings.Cut(c.name, " "); grouped {
		use = strings.TrimPrefix(c.usage, word+" ") // the group's command names the word
	}
	cc := &cobra.Command{
		Use: use, Short: c.short, Long: long, Hidden: c.hidden,
		DisableFlagsInUseLine: true,                // the usage line names the flags itself
		DisableFlagParsing:    c.rawArgs,           // the wrapper's arguments are FlowNet's contract
		Args:                  cobra.ArbitraryArgs, // each command refuses its own
	}
	run, given := c.run, (*givenFlags)(nil)
	if c.flags != nil {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		run = c.flags(fs)
		given = addFlags(cc.Flags(), fs)
	}
	cc.RunE = func(_ *cobra.Command, args []string) error {
		inv := base
		inv.name, inv.usage = c.name, c.usage
		if given != nil {
			uses, err := given.once()
			if err != nil {
				return err
			}
			inv.uses = uses
		}
		// The process's one reader of its signals; every command gets its contexts.
		stop, now, release := interrupt.Watch(sigs)
		defer release()
		inv.stop, inv.now = stop, now
		*code = run(inv, args)
		return nil
	}
	return cc
}

// groupOf is the command of a group word (`archive`), made with its first row: alone it
// prints its sub-commands and is refused; followed by a word that names none of them it
// refuses that word.
func groupOf(root *cobra.Command, word string, stderr io.Writer, code *int) *cobra.Command {
	for _, g := range root.Commands() {
		if g.Name() == word {
			return g
		}
	}
	g := &cobra.Command{
		Use:  word,
		Args: cobra.ArbitraryArgs,
		RunE: func(g *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownCommand(g, args[0])
			}
			fmt.Fprint(stderr, g.UsageString())
			*code = runner.ExitRefused
			return nil
		},
	}
	root.AddCommand(g)
	return g
}

// unknownCommand is the refusal of a word that names no sub-command of parent, with the
// closest names cobra finds.
func unknownCommand(parent *cobra.Command, word string) error {
	parent.SuggestionsMinimumDistance = 2 // cobra's own default, which it sets only for itself
	hint := ""
	if near := parent.SuggestionsFor(word); len(near) > 0 {
		hint = " (did you mean " + strings.Join(near, " or ") + "?)"
	}
	return fmt.Errorf("unknown command %q%s; %s lists the commands", word, hint, strings.Replace(parent.CommandPath(), "flowtest", "flowtest help", 1))
}

// helpCommand is `flowtest help [command]`: the list, a group's commands or one command's
// help, as its --help prints them; a name that is no command is refused.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:                   "help [command]",
		Short:                 "this list, or the usage and flags of one command",
		DisableFlagsInUseLine: true,
		Args:                  cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil {
				return unknownCommand(root, firstWord(args))
			}
			if len(rest) > 0 {
				return unknownCommand(target, rest[0])
			}
			target.InitDefaultHelpFlag() // listed as --help lists it
			return target.Help()
		},
	}
}

// completionCommand is `flowtest completion SHELL`: cobra's script for that shell, which
// completes commands, flags and the arguments of help and completion.
func completionCommand(root *cobra.Command) *cobra.Command {
	scripts := map[string]func(w io.Writer) error{
		"bash":       func(w io.Writer) error { return root.GenBashCompletionV2(w, true) },
		"zsh":        root.GenZshCompletion,
		"fish":       func(w io.Writer) error { return root.GenFishCompletion(w, true) },
		"powershell": root.GenPowerShellCompletionWithDesc,
	}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "print the shell completion script, e.g. source <(flowtest completion bash)",
		Long: "Prints the completion script of flowtest for the shell named. bash: source <(flowtest completion bash), " +
			"or save it under /etc/bash_completion.d/; zsh: flowtest completion zsh > \"${fpath[1]}/_flowtest\"; " +
			"fish: flowtest completion fish > ~/.config/fish/completions/flowtest.fish; " +
			"PowerShell: flowtest completion powershell | Out-String | Invoke-Expression.",
		DisableFlagsInUseLine: true,
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		Args:                  cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE:                  func(c *cobra.Command, args []string) error { return scripts[args[0]](c.OutOrStdout()) },
	}
}

// firstWord is the first argument that is not a flag: the word a command line names its
// command with.
func firstWord(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// givenFlags records what the user wrote for each flag of a command, every raw value in
// order, as pflag sets it: the rules of validate.go tell a value given from a default by
// it, and a flag given twice is refused unless it is repeatable (a multiFlag: --format,
// --only), where pflag would keep the last value silently.
type givenFlags struct {
	uses       map[string]flagUse
	repeatable []string
}

// recorded is a flag's value that records each value set into givenFlags.
type recorded struct {
	pflag.Value
	name  string
	given *givenFlags
}

func (r recorded) Set(s string) error {
	if err := r.Value.Set(s); err != nil {
		return err
	}
	u := r.given.uses[r.name]
	u.Values = append(u.Values, s)
	r.given.uses[r.name] = u
	return nil
}

// addFlags hands the flags declared on fs to pflag: one value shared by both (the
// declaration's variable), recorded.
func addFlags(pfs *pflag.FlagSet, fs *flag.FlagSet) *givenFlags {
	g := &givenFlags{uses: map[string]flagUse{}}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(*multiFlag); ok {
			g.repeatable = append(g.repeatable, f.Name)
		}
		pf := pflag.PFlagFromGoFlag(f)
		if pf.DefValue == "0s" {
			pf.DefValue = "0" // a zero default is not shown; pflag knows "0s" only of its own durations
		}
		pf.Value = recorded{Value: pf.Value, name: f.Name, given: g}
		pfs.AddFlag(pf)
	})
	return g
}

// once is the flags given, or the refusal of one given twice that is not repeatable.
func (g *givenFlags) once() (map[string]flagUse, error) {
	plain := map[string]flagcheck.Use{}
	for n, u := range g.uses {
		plain[n] = u.Use
	}
	if err := flagcheck.Once(plain, g.repeatable...); err != nil {
		hint := "give it once"
		if rep, ok := err.(flagcheck.Repeated); ok && rep.Name == "tags" {
			hint = "give one expression, e.g. --tags '@m5 or @m6'"
		}
		return nil, fmt.Errorf("%w: %s", err, hint)
	}
	return g.uses, nil
}

// flagError is pflag's refusal of a command's flags, naming the command; an unknown flag
// also gets why the command does not take it (notTaken) or the closest flag it takes.
func flagError(c *cobra.Command, err error) error {
	row := strings.TrimPrefix(c.CommandPath(), "flowtest ")
	if msg, ok := flagValueError(err); ok {
		return errors.New(msg)
	}
	msg := err.Error()
	if name, unknown := strings.CutPrefix(msg, "unknown flag: --"); unknown {
		msg = "unknown flag --" + name
		if why := notTaken[row][name]; why != "" {
			msg += ": " + why
		} else if near := nearestFlag(c.Flags(), name); near != "" {
			msg += " (did you mean --" + near + "?)"
		}
	}
	return fmt.Errorf("%s (%s --help lists the flags)", msg, c.CommandPath())
}

// nearestFlag is the flag of fs closest to name, "" when none is close: within two edits,
// or name a prefix of it (--tag, --dry).
func nearestFlag(fs *pflag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	slices.Sort(names)
	near := runner.Closest(name, names, 1)
	if len(near) == 0 || runner.EditDistance(name, near[0]) > 2 && !strings.HasPrefix(near[0], name) {
		return ""
	}
	return near[0]
}

// longFlags rewrites the single-dash long flags Go's flag package accepted (-tags x,
// -tags=x), which scripts may use, to --tags: pflag reads a single dash as one-letter flags,
// and flowtest's only one is -h. The values of flags and everything after "--" stay as they
// are; a command that parses no flags gets args untouched.
func longFlags(c *cobra.Command, args []string) []string {
	if c.DisableFlagParsing {
		return args
	}
	c.InitDefaultHelpFlag()
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			a = "-" + a
			out[i] = a
		}
		name, isFlag := strings.CutPrefix(a, "--")
		if !isFlag || strings.Contains(name, "=") {
			continue
		}
		if f := c.Flags().Lookup(name); f != nil && f.NoOptDefVal == "" {
			i++ // its value, whatever it looks like
		}
	}
	return out
}
