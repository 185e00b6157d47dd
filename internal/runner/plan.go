package runner

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ksqlflow/flowtest/internal/runner/tagexpr"
)

// Reasons a manifest entry does not run. They go into the scenario record verbatim.
const (
	ReasonNotImplemented = "not implemented: no feature file"
	ReasonFilteredByTag  = "filtered by tag expression"
	ReasonNotInRerun     = "filtered: did not fail in the archive being rerun"
	ReasonInterrupted    = "interrupted before it started"
	// ReasonFailFast is the not-run reason of what --fail-fast did not start (%s: the id of
	// the first failed scenario); its category is interrupted: the run stopped before it.
	ReasonFailFast = "--fail-fast: stopped after %s failed"
	// ReasonNeedsPrefix starts the reason of a scenario whose declared needs this machine
	// cannot meet ("needs windows (this is linux)").
	ReasonNeedsPrefix = "needs "
)

// Item is one manifest entry with what the run will do with it.
type Item struct {
	Entry
	Feature *Feature // nil when no feature file exists
	Run     bool
	Reason  string // why it does not run (empty when Run)
}

// Tags returns the feature's tags, or the entry's implied tags when there is no feature.
func (it Item) Tags() []string {
	if it.Feature != nil {
		return it.Feature.Tags
	}
	return it.Entry.Tags()
}

// Selection says what to run.
type Selection struct {
	Expr  tagexpr.Expr // the empty expression selects everything
	GOOS  string
	Rerun map[string]bool // non-nil: only these ids (the failed ones of an archive)
}

// Plan orders every manifest entry and decides for each whether it runs. Entries are never
// dropped: each one that does not run carries its reason, so "not run" can never be
// mistaken for "passed".
func Plan(m *Manifest, feats map[string]*Feature, sel Selection) []Item {
	items := make([]Item, 0, len(m.Scenarios))
	for _, e := range m.Scenarios {
		it := Item{Entry: e, Feature: feats[e.ID]}
		switch {
		case sel.Rerun != nil && !sel.Rerun[e.ID]:
			it.Reason = ReasonNotInRerun
		case !sel.Expr.Eval(it.Tags()):
			it.Reason = ReasonFilteredByTag
		case unmetOnHost(e.Needs, sel.GOOS) != "":
			it.Reason = unmetOnHost(e.Needs, sel.GOOS)
		case it.Feature == nil:
			it.Reason = ReasonNotImplemented
		default:
			it.Run = true
		}
		items = append(items, it)
	}
	return items
}

// WritePlan prints the ordered plan: what would run, and for everything else why not; every
// row shows the scenario's declared needs, and a legend explains the needs of what would run.
func WritePlan(w io.Writer, items []Item) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tID\tSERIES\tWILL RUN\tREASON / FEATURE\tNEEDS")
	n := 0
	users := map[Need][]string{}
	for i, it := range items {
		what := it.Reason
		if it.Run {
			n++
			what = fmt.Sprintf("%s:%d", it.Feature.Path, it.Feature.Line)
			for _, need := range it.Needs {
				users[need] = append(users[need], it.ID)
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i+1, it.ID, it.Series, yesNo(it.Run), what, it.Needs)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d scenarios would run\n", n, len(items))
	if len(users) == 0 {
		return
	}
	fmt.Fprintln(w, "Needs of the scenarios that would run:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, need := range KnownNeeds() {
		if ids := users[need]; len(ids) > 0 {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", need, strings.Join(ids, ", "), need.About())
		}
	}
	tw.Flush()
}

// Filtered reports whether the selection (--tags, --rerun) left the item out; an item left
// out for another reason (not implemented, a need this host lacks) is still selected.
func (it Item) Filtered() bool {
	return !it.Run && (it.Reason == ReasonFilteredByTag || it.Reason == ReasonNotInRerun)
}

// WriteList prints the manifest for `flowtest list`: the entries the selection keeps, each
// numbered by its place in the run order.
func WriteList(w io.Writer, items []Item) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tID\tSERIES\tACCEPTANCE\tNEEDS\tTAGS\tFEATURE\tLIMITS")
	apart := false
	for i, it := range items {
		if it.Filtered() {
			continue
		}
		if it.Extended && !apart {
			// The extended series are not acceptance scenarios: a table of their own.
			apart = true
			tw.Flush()
			fmt.Fprintln(w, "\nExtended series (beyond the acceptance scenarios; not required by the full gate):")
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "#\tID\tSERIES\tACCEPTANCE\tNEEDS\tTAGS\tFEATURE\tLIMITS")
		}
		feature := "no (not implemented)"
		if it.Feature != nil {
			feature = it.Feature.Path
		}
		acc := strings.Join(it.Acceptance, ",")
		if acc == "" {
			acc = "-"
		}
		limits := it.Limits
		if limits == "" {
			limits = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, it.ID, it.Series, acc, it.Needs, strings.Join(it.Tags(), " "), feature, limits)
	}
	tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
