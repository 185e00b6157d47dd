package cli

import (
	"bytes"
	"flag"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/steps/csv/wrapmode"
)

// parsed is what a probe command got from the tree: its positional arguments and the flags
// given, or the refusal.
type parsed struct {
	args           []string
	uses           map[string]flagUse
	code           int
	stdout, stderr string
	ran            bool
}

// parseRow runs args through a tree of one probe row whose flags bind declares, as Main
// would for a real row, and returns what its command got.
func parseRow(t *testing.T, bind func(fs *flag.FlagSet), args ...string) parsed {
	t.Helper()
	var p parsed
	row := command{name: "probe", usage: "probe", short: "a probe", flags: func(fs *flag.FlagSet) runFunc {
		bind(fs)
		return func(inv invocation, a []string) int { p.args, p.uses, p.ran = a, inv.uses, true; return 0 }
	}}
	p.code = runTree(t, []command{row}, append([]string{"probe"}, args...), &p)
	return p
}

// runTree is Main over the rows given instead of the table.
func runTree(t *testing.T, rows []command, args []string, p *parsed) int {
	t.Helper()
	var out, errb bytes.Buffer
	code := 0
	if !execute(tree(rows, invocation{stdout: &out, stderr: &errb}, nil, &code), args, &errb) {
		code = 2
	}
	p.stdout, p.stderr = out.String(), errb.String()
	return code
}

// Flags stand anywhere, also after the arguments; "--" ends them; each is parsed once (a
// repeatable flag holds each value once), a single-dash long flag is read as the long flag,
// and the value of a flag is never rewritten.
func TestFlagsInAnyPositionParsedOnce(t *testing.T) {
	var pk packFlags
	p := parseRow(t, pk.bind, "DIR", "--force")
	require.Equal(t, 0, p.code, p.stderr)
	assert.Equal(t, []string{"DIR"}, p.args)
	assert.True(t, pk.force, "--force after the archive dir")

	var ex exploreFlags
	p = parseRow(t, ex.bind, "ID", "--seed", "3")
	require.Equal(t, 0, p.code, p.stderr)
	assert.Equal(t, []string{"ID"}, p.args)
	assert.Equal(t, uint64(3), ex.seed, "--seed after the scenario id")

	var ex2 exploreFlags
	p = parseRow(t, ex2.bind, "ID", "--", "--seed", "3")
	require.Equal(t, 0, p.code, p.stderr)
	assert.Equal(t, []string{"ID", "--seed", "3"}, p.args, `"--" ends the flags`)
	assert.Equal(t, uint64(1), ex2.seed)

	var run runFlags
	p = parseRow(t, run.bind, "--format", "a", "-format=b", "-tags", "-x-y", "-dry-run")
	require.Equal(t, 0, p.code, p.stderr)
	assert.Equal(t, multiFlag{"a", "b"}, run.formats, "each --format once, -format as --format")
	assert.Equal(t, []string{"a", "b"}, p.uses["format"].Values)
	assert.Equal(t, "-x-y", run.tags, "a flag's value stays as given")
	assert.True(t, run.dryRun, "-dry-run is --dry-run")
	assert.Equal(t, []string{"true"}, p.uses["dry-run"].Values)
	_, defaulted := p.uses["target"]
	assert.False(t, defaulted, "a flag not given is not a use")

	var run2 runFlags
	p = parseRow(t, run2.bind, "--tags", "@a", "--tags=@b")
	assert.Equal(t, 2, p.code)
	assert.False(t, p.ran)
	assert.Contains(t, p.stderr, `--tags given 2 times ("@a", "@b"): give one expression`)
}

// Each command accepts only its own flags: a flag another command takes, or that the
// command's help listed and it ignored, is refused with exit 2, naming the flag and the
// command, before anything runs.
func TestEachCommandRefusesAFlagItDoesNotHonour(t *testing.T) {
	for _, tc := range []struct {
		args []string
		why  string
	}{
		{[]string{"sweep", "--concurrency", "3"}, "sweep selects and runs no scenario"},
		{[]string{"explore", "m5-serial-success", "--shard", "1/2"}, "explore runs the one scenario it names"},
		{[]string{"gate", "run", "r2", "--tags", "@m5"}, "the gate definition and its carry-over rules decide what runs"},
		{[]string{"check", "--product", "real"}, "check starts no sandbox"},
		{[]string{"list", "--env-file", ".env"}, "list reads no configuration"},
		{[]string{"gate", "show", "r2", "--target", "live"}, ""},
		{[]string{"steps", "--tags", "@m5"}, ""},
		{[]string{"evidence", "--tags", "@m5"}, ""},
		{[]string{"rehearse", "--concurrency", "2"}, ""},
		{[]string{"archive", "verify", "x", "--out", "y"}, ""},
		{[]string{"archive", "merge", "a", "b", "--force"}, ""},
		{[]string{"archive", "diff", "a", "b", "--force"}, ""},
		{[]string{"defects", "--tags", "@m5"}, ""},
		{[]string{"run", "--delete"}, ""},
		{[]string{"version", "--tags", "@m5"}, ""},
	} {
		var o, e bytes.Buffer
		code := Main(tc.args, nil, &o, &e, nil)
		flagArg := ""
		for _, a := range tc.args {
			if strings.HasPrefix(a, "--") {
				flagArg = a
			}
		}
		cmdName := strings.Join(tc.args[:commandLen(tc.args)], " ")
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, e.String(), "flowtest "+cmdName+": unknown flag "+flagArg, "%v", tc.args)
		assert.Contains(t, e.String(), tc.why, "%v", tc.args)
		assert.Empty(t, o.String(), "%v: nothing ran", tc.args)
	}
}

// commandLen is how many words of args name the command (two for a group's).
func commandLen(args []string) int {
	if args[0] == "archive" || args[0] == "gate" {
		return 2
	}
	return 1
}

// A mistyped flag gets the closest flag of the command; a mistyped command the closest
// command. Both exit 2.
func TestSuggestions(t *testing.T) {
	for args, want := range map[string]string{
		"run --tag @m5":         "flowtest run: unknown flag --tag (did you mean --tags?)",
		"list --feature x":      "flowtest list: unknown flag --feature (did you mean --features?)",
		"archive pack x --forc": "flowtest archive pack: unknown flag --forc (did you mean --force?)",
		"rnu":                   `flowtest: unknown command "rnu" (did you mean run?)`,
		"archive vrify x":       `flowtest archive: unknown command "vrify" (did you mean verify?)`,
		"gate rnu r2":           `flowtest gate: unknown command "rnu" (did you mean run?)`,
	} {
		var o, e bytes.Buffer
		assert.Equal(t, 2, Main(strings.Fields(args), nil, &o, &e, nil), args)
		assert.Contains(t, e.String(), want, args)
	}
	var o, e bytes.Buffer
	assert.Equal(t, 2, Main([]string{"run", "--zzzzzz"}, nil, &o, &e, nil))
	assert.NotContains(t, e.String(), "did you mean", "no suggestion when nothing is close")
}

// A group word alone prints its commands with their descriptions and is refused; its help,
// help of it, and the help of its commands in both forms print descriptions and exit 0.
func TestGroupHelp(t *testing.T) {
	for _, group := range []string{"archive", "gate"} {
		var o, e bytes.Buffer
		assert.Equal(t, 2, Main([]string{group}, nil, &o, &e, nil), group)
		for _, c := range commands {
			if word, sub, ok := strings.Cut(c.name, " "); ok && word == group {
				assert.Regexp(t, "(?m)^  "+sub+" +"+regexp.QuoteMeta(c.short), e.String(), "%s lists %s", group, sub)
			}
		}
		var h, he, hh, hhe bytes.Buffer
		assert.Equal(t, 0, Main([]string{group, "--help"}, nil, &h, &he, nil))
		assert.Equal(t, 0, Main([]string{"help", group}, nil, &hh, &hhe, nil))
		assert.Equal(t, h.String(), hh.String())
		assert.Contains(t, h.String(), e.String(), "the refusal shows the group's usage")
	}
	for _, args := range [][]string{{"archive", "verify", "--help"}, {"help", "archive", "verify"}, {"help", "gate", "run"}, {"gate", "run", "-h"}} {
		var o, e bytes.Buffer
		assert.Equal(t, 0, Main(args, nil, &o, &e, nil), "%v", args)
		name := strings.Join(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return slices.Contains([]string{"help", "--help", "-h"}, a) }), " ")
		c := commandNamed(name)
		require.NotNil(t, c, name)
		assert.Contains(t, o.String(), c.short, "%v: its description", args)
		assert.Contains(t, o.String(), "flowtest "+c.usage, "%v: its usage line", args)
	}
}

// flowtest completion SHELL prints a script for each shell; the script completes through
// `flowtest __complete`, which names flowtest's commands and a command's flags.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		var o, e bytes.Buffer
		require.Equal(t, 0, Main([]string{"completion", shell}, nil, &o, &e, nil), shell)
		assert.Greater(t, o.Len(), 1000, "%s: a script", shell)
		assert.Contains(t, o.String(), "flowtest", shell)
	}
	var bash, e bytes.Buffer
	require.Equal(t, 0, Main([]string{"completion", "bash"}, nil, &bash, &e, nil))
	assert.Contains(t, bash.String(), "__complete", "the bash script asks flowtest for the words")

	var words bytes.Buffer
	require.Equal(t, 0, Main([]string{"__complete", ""}, nil, &words, &e, nil))
	for _, c := range []string{"run", "list", "archive", "gate", "explore", "completion", "help"} {
		assert.Regexp(t, "(?m)^"+c+"\t", words.String(), "completion offers %s", c)
	}
	assert.NotContains(t, words.String(), wrapmode.Command, "a hidden command is not offered")
	var flags bytes.Buffer
	require.Equal(t, 0, Main([]string{"__complete", "archive", "pack", "--"}, nil, &flags, &e, nil))
	assert.Contains(t, flags.String(), "--force")
	assert.NotContains(t, flags.String(), "--tags", "only the command's own flags")

	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}} {
		var o, e bytes.Buffer
		assert.Equal(t, 2, Main(args, nil, &o, &e, nil), "%v", args)
	}
}

// No arguments: the usage, exit 2; --version and version print the version; help lists the
// commands but the hidden one.
func TestUsageVersionAndExitCodes(t *testing.T) {
	var o, e bytes.Buffer
	assert.Equal(t, 2, Main(nil, nil, &o, &e, nil))
	assert.Contains(t, e.String(), "Available Commands:")
	assert.Contains(t, e.String(), "  run ")
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		var vo, ve bytes.Buffer
		assert.Equal(t, 0, Main(args, nil, &vo, &ve, nil), "%v", args)
		assert.Equal(t, versionLine(build())+"\n", vo.String(), "%v", args)
	}
}

// The hidden wrapper gets its arguments as FlowNet gave them: no flag of flowtest's is
// parsed, rewritten (-tags stays) or refused, --help included.
func TestRawArgsRowGetsItsArgumentsUntouched(t *testing.T) {
	c := commandNamed(wrapmode.Command)
	require.NotNil(t, c)
	assert.True(t, c.rawArgs, "the wrapper parses its own flags")
	assert.True(t, c.hidden)

	var got []string
	row := command{name: "wrap", usage: "wrap", rawArgs: true, run: func(_ invocation, a []string) int { got = a; return 7 }}
	args := []string{"--mode", "m", "-tags", "x", "--", "launcher", "--help", "-h"}
	var p parsed
	assert.Equal(t, 7, runTree(t, []command{row}, append([]string{"wrap"}, args...), &p), p.stderr)
	assert.Equal(t, args, got)
}
