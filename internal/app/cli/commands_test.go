package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/steps/csv/wrapmode"
)

// The README's command list is the command table's: between its markers it holds exactly
// what writeReadmeCommands prints.
func TestReadmeCommandListIsTheTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	require.NoError(t, err)
	const begin, end = "<!-- commands: from internal/app/cli's command table -->\n", "<!-- /commands -->"
	_, rest, ok := strings.Cut(string(data), begin)
	require.True(t, ok, "README.md has no %q marker", begin)
	list, _, ok := strings.Cut(rest, end)
	require.True(t, ok, "README.md has no %q marker", end)
	var want bytes.Buffer
	writeReadmeCommands(&want)
	assert.Equal(t, want.String(), list, "README.md's command list differs from the table: paste the expected text between the markers")
}

// help lists every visible command of the table (a two-word one under its group word, whose
// help lists it); each command's --help starts with its short line, then its usage line.
func TestHelpAndDashHComeFromTheTable(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main([]string{"help"}, nil, &out, &errb, nil))
	for _, c := range commands {
		if c.hidden {
			assert.NotContains(t, out.String(), c.name, "hidden command listed")
			continue
		}
		word, sub, grouped := strings.Cut(c.name, " ")
		assert.Regexp(t, "(?m)^  "+word+" ", out.String(), "help lists %s", word)
		if grouped {
			var g, ge bytes.Buffer
			require.Equal(t, 0, Main([]string{"help", word}, nil, &g, &ge, nil))
			assert.Regexp(t, "(?m)^  "+sub+" +"+regexp.QuoteMeta(c.short)+"$", g.String(), "help %s lists %s with its description", word, sub)
		}
	}
	for _, c := range commands {
		if c.hidden {
			continue
		}
		for _, h := range []string{"-h", "--help", "-help"} {
			var o, e bytes.Buffer
			code := Main(append(strings.Fields(c.name), h), nil, &o, &e, nil)
			assert.Equal(t, 0, code, "%s %s", c.name, h)
			assert.True(t, strings.HasPrefix(o.String(), c.short+"\n"), "%s %s starts with its description, got:\n%s", c.name, h, o.String())
			assert.Contains(t, o.String(), "Usage:\n  flowtest "+c.usage+"\n", "%s %s shows its usage line", c.name, h)
		}
	}
}

func TestKsqlWrapIsNotInTheUsage(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main([]string{"help"}, nil, &out, &errb, nil))
	assert.NotContains(t, out.String(), wrapmode.Command)
}

// flagsIn are the flag names a help text lists (pflag's "      --name" and "  -h, --help"
// lines), sorted, but --help, which every command has.
func flagsIn(help string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  (?:-., |    )--([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		if m[1] != "help" {
			names = append(names, m[1])
		}
	}
	return names
}

// declaredFlags are the flags a row declares, sorted as the help lists them.
func declaredFlags(c *command) []string {
	var names []string
	if c.flags == nil {
		return nil
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs)
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// commandWords are the words that start c on a command line.
func commandWords(c *command) []string { return strings.Fields(c.name) }

// Every command's --help and `flowtest help <command>` print the same help, whose flags are
// the ones its row declares; the command parses exactly those: each one it lists is known
// to its parser (with a value and --help after it, the parser never answers "unknown
// flag"), and one it does not list is refused as unknown. The usage line and long help name
// only declared flags, so the README's list (made of the usage lines) cannot name a flag that
// is not there.
func TestEveryCommandParsesTheFlagsItsHelpLists(t *testing.T) {
	for i := range commands {
		c := &commands[i]
		if c.hidden || c.flags == nil {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			declared := declaredFlags(c)
			require.NotEmpty(t, declared)
			var dashH, dashHErr, help, helpErr bytes.Buffer
			require.Equal(t, 0, Main(append(commandWords(c), "--help"), nil, &dashH, &dashHErr, nil))
			require.Equal(t, 0, Main(append([]string{"help"}, strings.Fields(c.name)...), nil, &help, &helpErr, nil))
			assert.Equal(t, dashH.String(), help.String(), "--help and help <command> print the same")
			assert.Equal(t, declared, flagsIn(help.String()), "the help lists the declared flags")

			for _, name := range declared {
				var o, e bytes.Buffer
				code := Main(append(commandWords(c), "--"+name+"=x", "--help"), nil, &o, &e, nil)
				assert.NotContains(t, e.String(), "unknown flag", "--%s is parsed by %s", name, c.name)
				assert.Contains(t, []int{0, 2}, code, "--%s=x --help: help, or a refused value; nothing runs", name)
			}
			var o, e bytes.Buffer
			assert.Equal(t, 2, Main(append(commandWords(c), "--no-such-flag", "--help"), nil, &o, &e, nil))
			assert.Contains(t, e.String(), "flowtest "+c.name+": unknown flag --no-such-flag")

			for _, m := range regexp.MustCompile(`--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(c.usage+" "+c.long, -1) {
				if m[1] == "shard" && c.name == "archive merge" {
					continue // merge names the run flag its inputs were made with
				}
				assert.Contains(t, declared, m[1], "the usage line or help of %s names --%s", c.name, m[1])
			}
		})
	}
}

// help of a name that is not a command is refused like the command would be.
func TestHelpOfAnUnknownCommandIsRefused(t *testing.T) {
	var o, e bytes.Buffer
	assert.Equal(t, 2, Main([]string{"help", "frobnicate"}, nil, &o, &e, nil))
	assert.Contains(t, e.String(), `flowtest help: unknown command "frobnicate"`)
	o.Reset()
	e.Reset()
	assert.Equal(t, 2, Main([]string{"help", "archive", "vrify"}, nil, &o, &e, nil))
	assert.Contains(t, e.String(), `flowtest help: unknown command "vrify" (did you mean verify?); flowtest help archive lists the commands`)
	assert.Empty(t, o.String())
}

// Each command accepts only its own flags: for every command and every flag another command
// declares and it does not, parsing refuses the flag as unknown, naming it and the command
// (sweep took --tags and --concurrency and ignored them; explore took --shard). --help
// follows the flag, so a command that wrongly accepted it would print its help and exit 0,
// never run.
func TestEachCommandRefusesTheFlagsOfOthers(t *testing.T) {
	all := map[string]bool{}
	for i := range commands {
		for _, name := range declaredFlags(&commands[i]) {
			all[name] = true
		}
	}
	// The flags these commands took and ignored (or refused only after parsing): now none
	// of theirs.
	ignored := map[string][]string{
		"sweep":    {"tags", "rerun", "allow-empty", "confirmed-by", "concurrency", "product", "node", "timeout-scale", "api-budget", "lock-dir"},
		"check":    {"sandbox-bin", "product", "node", "lock-dir", "timeout-scale"},
		"explore":  {"tags", "rerun", "allow-empty", "shard", "repeat", "format", "sut-commit", "durations-from"},
		"gate run": {"tags", "rerun", "allow-empty", "repeat", "shard"},
		"list":     {"env-file", "sandbox-bin", "confirmed-by"},
	}
	for name, flags := range ignored {
		c := commandNamed(name)
		require.NotNil(t, c, name)
		for _, f := range flags {
			assert.NotContains(t, declaredFlags(c), f, "%s declares --%s, which it does not act on", name, f)
			assert.True(t, all[f], "--%s is some command's flag", f)
		}
	}
	for i := range commands {
		c := &commands[i]
		if c.hidden || c.flags == nil {
			continue
		}
		own := map[string]bool{}
		for _, name := range declaredFlags(c) {
			own[name] = true
		}
		for name := range all {
			if own[name] {
				continue
			}
			var o, e bytes.Buffer
			code := Main(append(commandWords(c), "--"+name+"=x", "--help"), nil, &o, &e, nil)
			assert.Equal(t, 2, code, "%s --%s: refused", c.name, name)
			assert.Contains(t, e.String(), "flowtest "+c.name+": unknown flag --"+name, "the refusal of --%s names it and %s", name, c.name)
		}
	}
}

// steps and defects kept the last value of a flag given twice, where every other command
// refuses the repeat: `defects --jobs 4 --jobs 1` ran with one job and said nothing.
// --only (names to add) stays repeatable.
func TestStepsAndDefectsRefuseAFlagGivenTwice(t *testing.T) {
	for _, args := range [][]string{
		{"steps", "--unused", "--unused=false"},
		{"defects", "--jobs", "4", "--jobs", "1"},
	} {
		var o, e bytes.Buffer
		code := Main(args, nil, &o, &e, nil)
		assert.Equal(t, 2, code, "%v: refused\n%s%s", args, o.String(), e.String())
		assert.Contains(t, e.String(), "given 2 times", "%v", args)
		assert.Contains(t, e.String(), args[1], "%v names the flag", args)
	}
}

// commandNamed is the row of a command's full name.
func commandNamed(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}
