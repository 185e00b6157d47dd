package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner/tagexpr"
)

// Counts says what a plan selects: Selected are the entries the tag expression (and --rerun)
// chose, Runnable those of them that will run. Selected-but-not-runnable entries are not
// implemented or need another platform.
type Counts struct {
	Entries, Selected, Runnable int
}

// Count counts a plan.
func Count(items []Item) Counts {
	c := Counts{Entries: len(items)}
	for _, it := range items {
		if it.Run {
			c.Runnable++
		}
		if it.Run || !filteredOut(it.Reason) {
			c.Selected++
		}
	}
	return c
}

// PlanCode is the exit code a plan gives before any scenario runs: ExitNothingRan when
// something is selected and none of it can run, else ExitPassed (an empty selection is the
// caller's to refuse, see CheckSelection).
func PlanCode(items []Item) int {
	c := Count(items)
	if c.Selected > 0 && c.Runnable == 0 {
		return ExitNothingRan
	}
	return ExitPassed
}

// filteredOut reports whether a not-run reason means the selection left the entry out (as
// opposed to a selected entry that cannot run).
func filteredOut(reason string) bool {
	return reason == ReasonFilteredByTag || reason == ReasonNotInRerun || results.IsOtherShard(reason)
}

// KnownTags lists every tag some manifest entry carries, in manifest order: the implied tags
// of each entry (@<id>, @<series>, @acc-<n>) and the tags of its feature file.
func KnownTags(items []Item) []string {
	var out []string
	seen := map[string]bool{}
	for _, it := range items {
		for _, t := range append(it.Entry.Tags(), it.Tags()...) {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// Closest returns up to n of known nearest to tag: by edit distance (a known tag that
// starts with tag, as a shortened id does, counts as distance 1), ties in known's order.
func Closest(tag string, known []string, n int) []string {
	type cand struct {
		tag  string
		dist int
		pos  int
	}
	cands := make([]cand, 0, len(known))
	for i, k := range known {
		if k == tag {
			continue
		}
		d := EditDistance(strings.ToLower(tag), strings.ToLower(k))
		if len(tag) > 2 && strings.HasPrefix(k, tag) && d > 1 {
			d = 1
		}
		cands = append(cands, cand{k, d, i})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].pos < cands[j].pos
	})
	var out []string
	for i := 0; i < len(cands) && i < n; i++ {
		out = append(out, cands[i].tag)
	}
	return out
}

// EditDistance is the Levenshtein distance in runes (the did-you-mean of tags here, of flags
// in internal/app/cli).
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// SelectionError is a refused selection: a tag no scenario carries, or a selection that
// selects no scenario.
type SelectionError struct {
	Expr    string   // the --tags expression as given
	Unknown []string // tags of Expr that no scenario carries
	Closest map[string][]string
	Empty   bool // the selection selects no manifest entry
	Rerun   string
	Entries int
}

func (e *SelectionError) Error() string {
	if len(e.Unknown) > 0 {
		var parts []string
		for _, t := range e.Unknown {
			p := "no scenario carries " + t
			if c := e.Closest[t]; len(c) > 0 {
				p += " (closest: " + strings.Join(c, ", ") + ")"
			}
			parts = append(parts, p)
		}
		return fmt.Sprintf("--tags %q: %s; `flowtest list` shows every scenario's tags", e.Expr, strings.Join(parts, "; "))
	}
	switch {
	case e.Rerun != "" && strings.TrimSpace(e.Expr) == "":
		return fmt.Sprintf("--rerun %s: no scenario of the manifest failed there, so nothing would run (add --allow-empty to accept an empty run)", e.Rerun)
	case e.Rerun != "":
		return fmt.Sprintf("--tags %q with --rerun %s selects no scenario: none of the scenarios that failed there carries that combination (add --allow-empty to accept an empty run)", e.Expr, e.Rerun)
	default:
		return fmt.Sprintf("--tags %q selects no scenario: every tag exists, but none of the %d scenarios matches the expression (add --allow-empty to accept an empty run)", e.Expr, e.Entries)
	}
}

// CheckSelection refuses a selection that cannot be what the user meant, before anything
// runs: a tag in the expression that no scenario carries (a typo there silently narrows or
// empties the run) is always refused, naming the closest existing tags; a selection that
// selects no scenario at all is refused unless allowEmpty. rerun is the --rerun archive ("" for
// none), for the message. A selection whose scenarios are all not runnable (not implemented,
// other platform) is not refused here: it runs and exits ExitNothingRan.
func CheckSelection(items []Item, exprText string, expr tagexpr.Expr, rerun string, allowEmpty bool) error {
	known := KnownTags(items)
	e := &SelectionError{Expr: exprText, Rerun: rerun, Entries: len(items), Closest: map[string][]string{}}
	for _, t := range expr.Tags() {
		if !slices.Contains(known, t) {
			e.Unknown = append(e.Unknown, t)
			e.Closest[t] = Closest(t, known, 3)
		}
	}
	if len(e.Unknown) > 0 {
		return e
	}
	if Count(items).Selected == 0 && !allowEmpty {
		e.Empty = true
		return e
	}
	return nil
}

// CheckRerun refuses rerun ids that the manifest does not list (a renamed or removed
// scenario would otherwise be dropped silently from the rerun).
func CheckRerun(m *Manifest, dir string, failed []string) error {
	var unknown []string
	for _, id := range failed {
		if _, ok := m.Entry(id); !ok {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("--rerun %s: failed scenario(s) %s are not in the run-order manifest (renamed or removed?); run them by their new tags instead", dir, strings.Join(unknown, ", "))
	}
	return nil
}

// ValidateFormat checks one --format value before anything runs: the formatter must be one
// godog knows, with a file name in an existing directory (godog creates the file but not its
// directory; the runner writes one file per scenario, see perScenarioFormat). A formatter
// without a file is refused: each scenario runs its own godog suite inside its work dir, so
// its output would go to the scenario's log there, deleted after the run, and nothing would
// show (issue 43). A comma would split the value into several formatters behind the runner's
// back, so it is refused too: repeat --format instead.
func ValidateFormat(f string) error {
	if strings.Contains(f, ",") {
		return fmt.Errorf("--format %q: one formatter per --format (repeat the flag instead of a comma list)", f)
	}
	name, path, hasPath := strings.Cut(f, ":")
	if godog.FindFmt(name) == nil {
		names := make([]string, 0)
		for n := range godog.AvailableFormatters() {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("--format %q: unknown formatter %q (known: %s; a file formatter is name:path, e.g. junit:out.xml)", f, name, strings.Join(names, ", "))
	}
	if !hasPath {
		return fmt.Errorf("--format %q: give the formatter a file, e.g. %s:%s (the run writes one per scenario, %s, redacted; the archive already holds cucumber.json, junit.xml and messages.ndjson of the whole run)",
			f, name, "out/"+name+formatExt(name), "out/"+name+"-<id>"+formatExt(name))
	}
	if strings.TrimSpace(path) == "" {
		return fmt.Errorf("--format %q: no file name after the colon (e.g. %s:out.xml)", f, name)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--format %q: directory %s of the output file does not exist", f, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--format %q: %s is a directory, not a file name", f, path)
	}
	return nil
}

// formatExt is the usual file extension of a godog formatter's output, for the example a
// refusal gives.
func formatExt(name string) string {
	switch name {
	case "junit":
		return ".xml"
	case "cucumber":
		return ".json"
	case "events":
		return ".ndjson"
	}
	return ".txt"
}
