package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/app/explorer"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// exploreFlags are what `flowtest explore` declares: its own flags and the run flags, which
// go on to the run path.
type exploreFlags struct {
	exploreSpec
	run runFlags
}

func (f *exploreFlags) bind(fs *flag.FlagSet) {
	f.exploreSpec.bind(fs)
	f.run.bindNamed(fs, exploreRunFlagNames...)
}

// exploreCommand is the table's explore: explore's own flags may stand anywhere among the
// run flags, so cmdExplore splits them (parseExploreArgs) and the run path parses the rest.
// The set the table declares parses the flags after the id first, so that a flag explore
// does not take (a run flag it would ignore, --shard, --tags) is refused as by every other
// command, not handed to the run path, which knows every run flag.
func exploreCommand(inv invocation, _ *exploreFlags, fs *flag.FlagSet, args []string) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		if _, code, ok := parseFlags(fs, "explore", args[1:], inv.stderr, "format"); !ok {
			return code
		}
	}
	return cmdExplore(inv, args)
}

// parseExploreArgs takes `<id>` (first), explore's flags and their values out of args, and
// returns the run flags that remain.
func parseExploreArgs(args []string) (exploreSpec, []string, error) {
	var sp exploreSpec
	own := flag.NewFlagSet("explore", flag.ContinueOnError)
	sp.bind(own)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return sp, nil, errors.New("explore: name the scenario first: flowtest explore <scenario id> [flags]")
	}
	sp.id = args[0]
	var rest []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fl := own.Lookup(name)
		if !strings.HasPrefix(a, "-") || fl == nil {
			rest = append(rest, a)
			continue
		}
		if bf, isBool := fl.Value.(interface{ IsBoolFlag() bool }); !hasValue && isBool && bf.IsBoolFlag() {
			value = "true" // a switch alone
		} else if !hasValue {
			if i+1 >= len(args) {
				return sp, nil, fmt.Errorf("explore: --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := fl.Value.Set(value); err != nil {
			return sp, nil, fmt.Errorf("flowtest explore: --%s: %v", name, err)
		}
	}
	if sp.schedules > 0 && sp.budget > 0 {
		return sp, nil, errors.New("explore: give --schedules or --time, not both")
	}
	if sp.schedules == 0 && sp.budget == 0 {
		sp.schedules = 50
	}
	if _, err := schedule.NewStrategy(sp.strategy, sp.seed, sp.depth, sp.bound); err != nil {
		return sp, nil, fmt.Errorf("explore: %v", err)
	}
	return sp, rest, nil
}

// cmdExplore is `flowtest explore <id> …`: the run path with the scenario selected by its tag
// and the session executing an exploration instead of one run.
func cmdExplore(inv invocation, args []string) int {
	stderr := inv.stderr
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help"}, args[0]) {
		// The help of the table's row (invocation.help).
		return runCommand("explore", args[:1], inv, runExtras{})
	}
	sp, rest, err := parseExploreArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return runner.ExitRefused
	}
	if via := exploreRedirect(sp.id, rest); via != nil {
		sp.via, sp.id = via, via.To
	}
	if sp.replay != "" {
		f, err := explorer.LoadReplay(sp.replay)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest explore: %v\n", err)
			return runner.ExitRefused
		}
		if f.Scenario != sp.id {
			fmt.Fprintf(stderr, "flowtest explore: %s replays %s, not %s\n", sp.replay, f.Scenario, sp.id)
			return runner.ExitRefused
		}
	}
	runArgs := append([]string{"--tags", "@" + sp.id}, rest...)
	sp.interrupt = inv.stop
	if sp.json {
		sp.jsonOut, inv.stdout = inv.stdout, inv.stderr
	}
	return runCommand("explore", runArgs, inv,
		runExtras{command: append([]string{"flowtest", "explore"}, args...), label: "explore-" + sp.id, explore: &sp})
}

// exploreRedirect reads the manifest the run flags in rest name (--features, default
// features/) and returns the redirect of scenario id's entry (explore: {via: …, reason: …}),
// nil when it has none. A manifest that cannot be read is left to the run path, which
// refuses it with its own message; so is an id the manifest does not know.
func exploreRedirect(id string, rest []string) *explorer.Redirect {
	fs := flag.NewFlagSet("explore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f runFlags
	f.bind(fs)
	if err := fs.Parse(rest); err != nil {
		return nil
	}
	m, err := runner.LoadManifest(os.DirFS(f.features), "manifest.yaml")
	if err != nil {
		return nil
	}
	e, ok := m.Entry(id)
	if !ok || e.Explore == nil || e.Explore.Via == "" {
		return nil
	}
	// ParseManifest checked that the target exists and is explorable itself.
	return &explorer.Redirect{From: id, To: e.Explore.Via, Reason: e.Explore.Reason}
}
