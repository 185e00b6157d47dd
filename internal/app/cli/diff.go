package cli

// flowtest archive diff A B: the differential check of issue 41 (item 5). The same
// scenarios run on two FlowNets (the real product and flowtest's reference) leave the same
// record history and outputs once ids, times and tokens are normalised (the scenario
// record's `differential`); this command compares two archives scenario by scenario and
// prints every difference. A difference listed in the explained-differences file (scenario
// or "*", path pattern, reason) is shown with its reason; an entry that matched nothing is
// reported as stale. Exit: 0 when every difference is explained, 1 when one is not, 2 when
// refused. It is an `archive` subcommand because it reads archives only, as verify, pack
// and merge do, and never starts a FlowNet.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// defaultKnownDiffs is the explained-differences file `archive diff` reads when --known is
// not given (absent: no difference is explained).
const defaultKnownDiffs = "features/differential-known.yaml"

// diffFlags are the flags of `flowtest archive diff`.
type diffFlags struct{ known string }

func (f *diffFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.known, "known", defaultKnownDiffs, "explained differences: a YAML list of {scenario: ID or \"*\", path: pattern (* matches any text), reason: why, race: true when timing decides whether it shows}")
}

// knownDiff is one explained difference. Race marks a difference that timing decides (a
// free race the scenario accepts either way): when the race falls the same way on both
// sides the entry matches nothing, which is no sign that it is out of date, so it is
// reported as unmatched, not stale.
type knownDiff struct {
	Scenario string `yaml:"scenario"`
	Path     string `yaml:"path"`
	Reason   string `yaml:"reason"`
	Race     bool   `yaml:"race"`
	used     bool
}

func (k *knownDiff) matches(d results.Difference) bool {
	return (k.Scenario == "*" || k.Scenario == d.Scenario) && globMatch(k.Path, d.Path)
}

// globMatch matches s against a pattern whose only special character is * (any text, also
// none): paths hold [ and ], which path.Match would read as classes.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// readKnownDiffs reads the explained-differences file; the default file may be absent.
func readKnownDiffs(file string, named bool) ([]*knownDiff, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) && !named {
		return nil, nil
	}
	if err != nil {
		return nil, refuse("--known: %v", err)
	}
	var ks []*knownDiff
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&ks); err != nil && !errors.Is(err, io.EOF) {
		return nil, refuse("--known %s: %v", file, err)
	}
	for i, k := range ks {
		if k == nil || k.Scenario == "" || k.Path == "" || strings.TrimSpace(k.Reason) == "" {
			return nil, refuse("--known %s: entry %d needs scenario, path and reason", file, i+1)
		}
	}
	return ks, nil
}

// findArchive is dir when it is an archive, else the only archive under it (a run's --out
// root: <out>/<date>/<time>-<label>/).
func findArchive(dir string) (string, error) {
	for _, f := range []string{"run.json", results.ScenarioDir} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return dir, nil
		}
	}
	found, _ := filepath.Glob(filepath.Join(dir, "*", "*", "run.json"))
	if len(found) == 1 {
		return filepath.Dir(found[0]), nil
	}
	if len(found) > 1 {
		return "", refuse("%s holds %d archives: name one", dir, len(found))
	}
	return "", refuse("%s is not a flowtest archive (nor the root of one)", dir)
}

func cmdDiff(inv invocation, f *diffFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if !archiveArgs(inv, args, 2, 2) {
		return runner.ExitRefused
	}
	_, named := inv.uses["known"]
	known, err := readKnownDiffs(f.known, named)
	if err != nil {
		return exitFor(stderr, "archive diff", err)
	}
	var sides [2]map[string]*results.Scenario
	for i, arg := range args {
		dir, err := findArchive(arg)
		if err != nil {
			return exitFor(stderr, "archive diff", err)
		}
		// Both sides are verified first: a difference of two archives that do not hold
		// together would be a difference of whichever files the reader read.
		scen, _, err := results.ReadVerified(dir)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest archive diff: %v\n", err)
			return runner.ExitRefused
		}
		sides[i] = map[string]*results.Scenario{}
		for _, s := range scen {
			sides[i][s.ID] = s
		}
	}
	ids := unionScenarioIDs(sides[0], sides[1])
	var unexplained, explained, unread int
	for _, id := range ids {
		a, b := sides[0][id], sides[1][id]
		if a != nil && b != nil && a.Status != results.StatusNotRun && b.Status != results.StatusNotRun && (a.Differential == nil || b.Differential == nil) {
			unread++
		}
		for _, d := range results.DiffScenarios(id, a, b) {
			why := explainedBy(known, d)
			line := fmt.Sprintf("%s  %s\n    A: %s\n    B: %s\n", d.Scenario, d.Path, d.A, d.B)
			if why != nil {
				explained++
				fmt.Fprintf(stdout, "%s    known: %s\n", line, why.Reason)
			} else {
				unexplained++
				fmt.Fprint(stdout, "DIFF "+line)
			}
		}
	}
	stale, sameRace := 0, 0
	for _, k := range known {
		switch {
		case k.used:
		case k.Race:
			sameRace++
			fmt.Fprintf(stdout, "race fell the same way: %s %s: matches no difference this time\n", k.Scenario, k.Path)
		default:
			stale++
			fmt.Fprintf(stdout, "stale: %s %s (%s): matches no difference\n", k.Scenario, k.Path, k.Reason)
		}
	}
	fmt.Fprintf(stdout, "%d scenarios compared: %d unexplained differences, %d explained, %d stale explanations", len(ids), unexplained, explained, stale)
	if sameRace > 0 {
		fmt.Fprintf(stdout, ", %d race explanations unmatched", sameRace)
	}
	if unread > 0 {
		fmt.Fprintf(stdout, ", %d scenarios without a differential history on one side", unread)
	}
	fmt.Fprintln(stdout)
	if unexplained > 0 {
		return runner.ExitFailed
	}
	return runner.ExitPassed
}

// explainedBy is the first known difference that explains d, nil if none; every one that
// matches is marked used (none is stale).
func explainedBy(known []*knownDiff, d results.Difference) *knownDiff {
	var why *knownDiff
	for _, k := range known {
		if k.matches(d) {
			k.used = true
			if why == nil {
				why = k
			}
		}
	}
	return why
}

func unionScenarioIDs(a, b map[string]*results.Scenario) []string {
	seen := map[string]bool{}
	var ids []string
	for _, m := range []map[string]*results.Scenario{a, b} {
		for id := range m {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	return ids
}
