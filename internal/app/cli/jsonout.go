package cli

// The --json forms of list, check and steps: one JSON object each on stdout, in the shapes
// below (docs/running.md, "Machine-readable output"). The field names are a contract: add
// fields, never rename or drop one.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/ksqlflow/flowtest/internal/harness/stepindex"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// jsonFlag is --json of a command that prints a report.
type jsonFlag struct{ json bool }

func (j *jsonFlag) bindJSON(fs *flag.FlagSet, what string) {
	fs.BoolVar(&j.json, "json", false, "print "+what+" as one JSON object instead of text (docs/running.md, \"Machine-readable output\")")
}

// writeJSON writes v as one indented JSON object and a newline. With red, every key and
// string goes through the console's redactor (as the text output does), the document staying
// valid JSON.
func writeJSON(w io.Writer, v any, red *redact.Redactor) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the JSON output: %w", err)
	}
	if red != nil {
		if data, err = red.JSONText(data); err != nil {
			return fmt.Errorf("redact the JSON output: %w", err)
		}
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// listJSON is `flowtest list --json`: every scenario of the manifest in run order, each
// saying whether the selection (--tags, --rerun) chose it and, if it would not run, why.
type listJSON struct {
	Scenarios []listScenarioJSON `json:"scenarios"`
	Totals    listTotalsJSON     `json:"totals"`
}

type listScenarioJSON struct {
	Position    int      `json:"position"` // 1-based, in run order
	ID          string   `json:"id"`
	Series      string   `json:"series"`
	Extended    bool     `json:"extended"`
	Acceptance  []string `json:"acceptance"`
	Needs       []string `json:"needs"`
	Tags        []string `json:"tags"`
	FeatureFile string   `json:"feature_file"` // "" when not implemented
	Line        int      `json:"line"`
	Selected    bool     `json:"selected"` // chosen by --tags / --rerun
	Runs        bool     `json:"runs"`     // selected and runnable here
	Reason      string   `json:"reason"`   // why it does not run ("" when it runs)
}

type listTotalsJSON struct {
	Scenarios      int `json:"scenarios"`
	Acceptance     int `json:"acceptance"`
	Extended       int `json:"extended"`
	Selected       int `json:"selected"`
	WithFeature    int `json:"with_feature"`    // of the selected
	NotImplemented int `json:"not_implemented"` // of the selected
}

func listReport(items []runner.Item) listJSON {
	out := listJSON{Scenarios: make([]listScenarioJSON, 0, len(items))}
	t := &out.Totals
	for i, it := range items {
		s := listScenarioJSON{Position: i + 1, ID: it.ID, Series: it.Series, Extended: it.Extended,
			Acceptance: nonNil(it.Acceptance), Needs: needNames(it.Needs), Tags: nonNil(it.Tags()),
			Selected: !it.Filtered(), Runs: it.Run, Reason: it.Reason}
		if it.Feature != nil {
			s.FeatureFile, s.Line = it.Feature.Path, int(it.Feature.Line)
		}
		out.Scenarios = append(out.Scenarios, s)
		t.Scenarios++
		if it.Extended {
			t.Extended++
		} else {
			t.Acceptance++
		}
		if s.Selected {
			t.Selected++
			if it.Feature != nil {
				t.WithFeature++
			} else {
				t.NotImplemented++
			}
		}
	}
	return out
}

func needNames(n runner.Needs) []string {
	out := make([]string, len(n))
	for i, x := range n {
		out[i] = string(x)
	}
	return out
}

// nonNil makes an empty list [] in JSON, not null: a consumer iterates without a check.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkJSON is `flowtest check --json`: every check in the order the text lists them.
type checkJSON struct {
	Target string          `json:"target"`
	Passed bool            `json:"passed"`
	Failed int             `json:"failed"`
	Checks []checkItemJSON `json:"checks"`
}

type checkItemJSON struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Verdict string `json:"verdict"` // PASS or FAIL
	Detail  string `json:"detail"`
}

func checkReport(target string, rep safety.Report) checkJSON {
	out := checkJSON{Target: target, Passed: rep.OK(), Failed: len(rep.Violations()), Checks: []checkItemJSON{}}
	for _, c := range rep.Checks {
		v := "PASS"
		if !c.OK {
			v = "FAIL"
		}
		out.Checks = append(out.Checks, checkItemJSON{Name: c.Name, Subject: c.Subject, Verdict: v, Detail: c.Reason})
	}
	return out
}

// stepsJSON is `flowtest steps --json`: the definitions (with --unused, the unused ones
// only), then the feature steps that match none or several, and the counts of the text's
// last line.
type stepsJSON struct {
	Definitions []stepDefJSON     `json:"definitions"`
	Undefined   []featureStepJSON `json:"undefined"`
	Ambiguous   []ambiguousJSON   `json:"ambiguous"`
	Totals      stepsTotalsJSON   `json:"totals"`
}

type stepDefJSON struct {
	Regexp    string   `json:"regexp"`
	Handler   string   `json:"handler"`
	File      string   `json:"file"` // "" when unknown
	Line      int      `json:"line"`
	Uses      int      `json:"uses"`      // matching feature steps, repeats counted
	Scenarios []string `json:"scenarios"` // the scenarios using it, in run order
}

type featureStepJSON struct {
	Scenario string `json:"scenario"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Step     string `json:"step"`
}

type ambiguousJSON struct {
	featureStepJSON
	Matches []stepDefJSON `json:"matches"`
}

type stepsTotalsJSON struct {
	Definitions int `json:"definitions"`
	Unused      int `json:"unused"`
	Scenarios   int `json:"scenarios"`
	Steps       int `json:"steps"`
	Undefined   int `json:"undefined"`
	Ambiguous   int `json:"ambiguous"`
}

func stepDefOf(e stepindex.Entry) stepDefJSON {
	d := stepDefJSON{Regexp: e.Def.Expr, Handler: stepindex.ShortName(e.Def.Handler), Line: e.Def.Line, Uses: e.Uses, Scenarios: nonNil(e.Scenarios)}
	if e.Def.File != "" {
		d.File = stepindex.RelFile(e.Def)
	}
	return d
}

func featureStepOf(s stepindex.Step) featureStepJSON {
	return featureStepJSON{Scenario: s.Scenario, File: s.File, Line: s.Line, Step: s.String()}
}
