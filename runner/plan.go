package runner

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ksqlflow/flowtest/runner/tagexpr"
)

// Reasons a manifest entry does not run. They go into the scenario record verbatim.
const (
	ReasonNotImplemented = "not implemented: no feature file"
	ReasonFilteredByTag  = "filtered by tag expression"
	ReasonNotInRerun     = "filtered: did not fail in the archive being rerun"
	ReasonInterrupted    = "interrupted before it started"
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
		case e.Platform != "any" && e.Platform != sel.GOOS:
			it.Reason = fmt.Sprintf("platform: runs only on %s", e.Platform)
		case it.Feature == nil:
			it.Reason = ReasonNotImplemented
		default:
			it.Run = true
		}
		items = append(items, it)
	}
	return items
}

// WritePlan prints the ordered plan: what would run, and for everything else why not.
func WritePlan(w io.Writer, items []Item) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tID\tSERIES\tWILL RUN\tREASON / FEATURE")
	n := 0
	for i, it := range items {
		what := it.Reason
		if it.Run {
			n++
			what = fmt.Sprintf("%s:%d", it.Feature.Path, it.Feature.Line)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", i+1, it.ID, it.Series, yesNo(it.Run), what)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d scenarios would run\n", n, len(items))
}

// WriteList prints the manifest for `flowtest list`.
func WriteList(w io.Writer, items []Item) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tID\tSERIES\tACCEPTANCE\tTAGS\tPLATFORM\tFEATURE\tLIMITS")
	for i, it := range items {
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
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, it.ID, it.Series, acc, strings.Join(it.Tags(), " "), it.Platform, feature, limits)
	}
	tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
