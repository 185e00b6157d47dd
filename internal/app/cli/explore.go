package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/ksqlflow/flowtest/internal/app/explorer"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// exploreFlags are what `flowtest explore` declares: its own flags and the run flags it
// takes, which go on to the run path.
type exploreFlags struct {
	exploreSpec
	run runFlags
}

func (f *exploreFlags) bind(fs *flag.FlagSet) {
	f.exploreSpec.bind(fs)
	f.run.bindNamed(fs, exploreRunFlagNames...)
	f.run.defaults(without(runFlagNames, exploreRunFlagNames...)...)
}

// check takes the scenario from args (the one argument) and checks explore's own flags
// together: --schedules or --time (default 50 schedules), a strategy its flags make.
func (sp *exploreSpec) check(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("explore: name one scenario: flowtest explore <scenario id> [flags] (got %d arguments)", len(args))
	}
	sp.id = args[0]
	if sp.schedules > 0 && sp.budget > 0 {
		return errors.New("explore: give --schedules or --time, not both")
	}
	if sp.schedules == 0 && sp.budget == 0 {
		sp.schedules = 50
	}
	if _, err := schedule.NewStrategy(sp.strategy, sp.seed, sp.depth, sp.bound); err != nil {
		return fmt.Errorf("explore: %v", err)
	}
	return nil
}

// cmdExplore is `flowtest explore <id> …`: the run path with the scenario selected by its tag
// and the session executing an exploration instead of one run.
func cmdExplore(inv invocation, f *exploreFlags, args []string) int {
	stderr, sp := inv.stderr, &f.exploreSpec
	if err := sp.check(args); err != nil {
		fmt.Fprintln(stderr, err)
		return runner.ExitRefused
	}
	if via := exploreRedirect(sp.id, f.run.features); via != nil {
		sp.via, sp.id = via, via.To
	}
	if sp.replay != "" {
		r, err := explorer.LoadReplay(sp.replay)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest explore: %v\n", err)
			return runner.ExitRefused
		}
		if r.Scenario != sp.id {
			fmt.Fprintf(stderr, "flowtest explore: %s replays %s, not %s\n", sp.replay, r.Scenario, sp.id)
			return runner.ExitRefused
		}
	}
	run := f.run
	run.tags = "@" + sp.id
	inv.uses = withGiven(inv.uses, "tags", run.tags)
	sp.interrupt = inv.stop
	if sp.json {
		sp.jsonOut, inv.stdout = inv.stdout, inv.stderr
	}
	return runWith(&run, inv, nil, runExtras{command: inv.line, label: "explore-" + sp.id, explore: sp})
}

// exploreRedirect reads the manifest of the features directory (--features) and returns the
// redirect of scenario id's entry (explore: {via: …, reason: …}), nil when it has none. A
// manifest that cannot be read is left to the run path, which refuses it with its own
// message; so is an id the manifest does not know.
func exploreRedirect(id, features string) *explorer.Redirect {
	m, err := runner.LoadManifest(os.DirFS(features), "manifest.yaml")
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
