package cli

// flowtest gate show | run: release gates (internal/app/gate decides the scope and builds the
// record; gate run runs the scope through the run path, which writes the record).

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/app/gate"
	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// Exit codes of `flowtest gate run` beyond the run's: the verdict decides.
const (
	exitGatePass       = runner.ExitPassed // PASS
	exitGateFail       = runner.ExitFailed // FAIL (or the archive failed its own leak check)
	exitGateIncomplete = 3                 // INCOMPLETE: nothing failed, but not everything passed or was carried over
)

// gateShowFlags are the flags of `flowtest gate show`.
type gateShowFlags struct {
	runFlags
	all bool
}

func (f *gateShowFlags) bind(fs *flag.FlagSet) {
	f.bindNamed(fs, "features")
	fs.BoolVar(&f.all, "all", false, "also list the scenarios of the carry-over series (the scope when no rule holds)")
}

// loadGate plans every scenario of c's manifest and target and loads the named gate's
// definition against them.
func loadGate(c common, name string) ([]runner.Item, *gate.Def, error) {
	items, _, _, err := c.plan()
	if err != nil {
		return nil, nil, err
	}
	g, err := gate.Load(c.features, name, items)
	return items, g, err
}

func cmdGateShow(inv invocation, f *gateShowFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if len(args) != 1 {
		return refuseUsage(stderr, inv.usage)
	}
	items, g, err := loadGate(common{target: "sandbox", features: f.features}, args[0])
	if err != nil {
		return exitFor(stderr, "gate show", err)
	}
	req := g.RequiredIDs(items)
	inScope := map[string]bool{}
	for _, id := range req {
		inScope[id] = true
	}
	if f.all {
		for _, r := range g.Rules {
			for _, id := range g.RuleScenarios(r, items) {
				inScope[id] = true
			}
		}
	}
	for _, it := range items {
		if inScope[it.ID] {
			fmt.Fprintln(stdout, it.ID)
		}
	}
	implemented := 0
	for _, it := range items {
		if inScope[it.ID] && it.Feature != nil {
			implemented++
		}
	}
	fmt.Fprintf(stderr, "# gate %s (%s, sha256 %.12s): %s\n", g.Name, g.File, g.SHA256, g.Title)
	fmt.Fprintf(stderr, "# required: %s — %d scenarios\n", g.Required, len(req))
	for _, r := range g.Rules {
		fmt.Fprintf(stderr, "# carry-over %s (%d scenarios) when the SUT diff touches none of: %s\n", r.Series, len(g.RuleScenarios(r, items)), strings.Join(r.Paths, ", "))
	}
	fmt.Fprintf(stderr, "# listed: %d, of which %d have a feature file today\n", len(inScope), implemented)
	return 0
}

// gateRunFlags are the flags of `flowtest gate run`: the run flags, which go on to the run
// path, and the gate's own (gateOnlyFlags).
type gateRunFlags struct {
	runFlags
	sutRepo, since string
}

// gateOnlyFlags are gate run's own flags; the others go to the run path.
var gateOnlyFlags = []string{"sut-repo", "since-archive"}

func (f *gateRunFlags) bind(fs *flag.FlagSet) {
	f.bindNamed(fs, gateRunFlagNames...) // --durations-from stays: without --shard it only gives the progress line its ETA
	f.defaults(without(runFlagNames, gateRunFlagNames...)...)
	fs.StringVar(&f.sutRepo, "sut-repo", "", "the SUT's git repository `DIR`: the carry-over rules read git diff --stat there (required)")
	fs.StringVar(&f.since, "since-archive", "", "archive of the last accepting run: carried-over scenarios point to their passing records there")
}

func cmdGateRun(inv invocation, f *gateRunFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if len(args) != 1 {
		return refuseUsage(stderr, inv.usage)
	}
	name := args[0]
	switch {
	case strings.TrimSpace(f.sutCommit) == "":
		fmt.Fprintln(stderr, "flowtest gate run: --sut-commit is required: the gate record is for one commit of the SUT")
		return runner.ExitRefused
	case strings.TrimSpace(f.sutRepo) == "":
		fmt.Fprintln(stderr, "flowtest gate run: --sut-repo is required: the SUT's git repository, where the carry-over rules read the diff")
		return runner.ExitRefused
	}
	c := f.common
	c.tags, c.rerun = "", ""
	items, g, err := loadGate(c, name)
	if err != nil {
		return exitFor(stderr, "gate run", err)
	}
	ctx, cancel := context.WithTimeout(inv.stop, 2*time.Minute) // the SUT's git; a signal stops it
	defer cancel()
	repo, err := gate.OpenGit(f.sutRepo)
	if err != nil {
		return exitFor(stderr, "gate run", err)
	}
	rec, runIDs, err := gate.Plan(ctx, g, items, f.target, f.sutCommit, repo, f.since)
	if err != nil && inv.stop.Err() != nil {
		err = refusal.Interrupted("interrupted while planning the gate (%v); nothing ran", err)
	}
	if err != nil {
		return exitFor(stderr, "gate run", err)
	}
	writeGatePlan(stdout, rec, runIDs)

	// The run path, with the scope as its selection and the resolved commit, as if given.
	tags := make([]string, len(runIDs))
	for i, id := range runIDs {
		tags[i] = "@" + id
	}
	run := f.runFlags
	run.tags, run.sutCommit = strings.Join(tags, " or "), rec.SUT.Commit
	inv.uses = withGiven(inv.uses, "tags", run.tags)
	inv.uses = withGiven(inv.uses, "sut-commit", run.sutCommit)
	for _, n := range gateOnlyFlags {
		delete(inv.uses, n)
	}
	code := runWith(&run, inv, nil, runExtras{gate: rec, label: "gate-" + g.Name, command: inv.line})
	if f.dryRun {
		return code // the plan above and the run's dry run: nothing ran, no record
	}
	if rec.Verdict == "" || code == runner.ExitRefused || code == runner.ExitInterrupted {
		if code != runner.ExitRefused && rec.Verdict == "" {
			fmt.Fprintf(stdout, "gate %s: no verdict (the run ended before its record was written)\n", g.Name)
		}
		return code
	}
	fmt.Fprintf(stdout, "gate %s: %s — %s\n", g.Name, rec.Verdict, rec.VerdictWhy)
	fmt.Fprintf(stdout, "gate record: %s\n", filepath.Join(rec.Archive, results.GateFile))
	switch {
	case rec.Verdict == results.GateFail:
		return exitGateFail
	case code == runner.ExitFailed:
		return exitGateFail // the archive failed its own leak check, or could not be written
	case rec.Verdict == results.GateIncomplete:
		return exitGateIncomplete
	}
	return exitGatePass
}

// writeGatePlan prints the scope before the run starts.
func writeGatePlan(w io.Writer, g *results.GateRecord, runIDs []string) {
	fmt.Fprintf(w, "gate %s (%s): SUT commit %s\n", g.Gate, g.Definition, g.SUT.Commit)
	if g.SUT.Head != "" {
		fmt.Fprintf(w, "  warning: the SUT repository's HEAD is %s, not the gate's commit\n", g.SUT.Head)
	}
	for _, r := range g.CarryOver {
		state := "runs"
		if r.Holds {
			state = "carried over"
		}
		fmt.Fprintf(w, "  carry-over %s: %s — %s\n", r.Series, state, r.Why)
	}
	fmt.Fprintf(w, "  to run (%d): %s\n", len(runIDs), strings.Join(runIDs, ", "))
}
