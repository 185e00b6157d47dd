// Package gate holds release gates. A gate definition (features/gates/<name>.yaml)
// names the scenarios that must pass (a tag expression) and carry-over rules: a series may be
// skipped when the SUT diff since the commit of its last passing records touches none of the
// rule's paths. Plan computes the scope (required ∪ every series whose rule does not hold)
// and the gate record; `flowtest gate run` (internal/app/cli) runs the scope through the normal
// run path, whose archive writes the record (gate.json, README.md, index.html). The SUT's
// git history is reached through Repo. It is policy that needs the manifest, tag expressions
// and git, so it is a package tested without the binary (gatetest makes the repositories).
package gate

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/base/yamlerr"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/runner/tagexpr"
)

// gatesDir is where gate definitions live, inside the features directory.
const gatesDir = "gates"

// Def is one gate definition file, validated against the manifest.
type Def struct {
	File          string // as the operator knows it (features/gates/r2.yaml)
	SHA256        string
	Name, Title   string
	Required      string // the tag expression of the scenarios that must pass
	requiredExpr  tagexpr.Expr
	requiredCount int
	Rules         []CarryRule
}

// CarryRule lets a series be carried over when the SUT diff touches none of Paths.
type CarryRule struct {
	Series        string
	Paths         []string
	Justification string
}

var (
	gateKeys     = []string{"schema_version", "name", "title", "required", "required_count", "carry_over"}
	ruleKeys     = []string{"series", "paths", "justification"}
	gateNameRule = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
)

// gateFile finds a gate definition: a name is features/gates/<name>.yaml, a path (with a
// separator or .yaml) is used as it is.
func gateFile(featuresDir, gate string) string {
	if strings.ContainsAny(gate, `/\`) || strings.HasSuffix(gate, ".yaml") || strings.HasSuffix(gate, ".yml") {
		return gate
	}
	return filepath.Join(featuresDir, gatesDir, gate+".yaml")
}

// knownGates lists the names of the gates in features/gates.
func knownGates(featuresDir string) []string {
	matches, _ := filepath.Glob(filepath.Join(featuresDir, gatesDir, "*.yaml"))
	var names []string
	for _, m := range matches {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Load reads and validates a gate definition against the manifest (items: every entry,
// in run order). Every error is one line naming file:line.
func Load(featuresDir, gate string, items []runner.Item) (*Def, error) {
	file := gateFile(featuresDir, gate)
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			known := knownGates(featuresDir)
			return nil, refusal.New("gate %q: no definition at %s (gates in %s: %s)", gate, file, filepath.Join(featuresDir, gatesDir), cmp.Or(strings.Join(known, ", "), "none"))
		}
		return nil, refusal.New("gate %q: %v", gate, err)
	}
	return Parse(file, data, items)
}

// Parse parses and validates a gate definition. It refuses YAML errors, more than one
// document, unknown keys (at any level), values of the wrong type, a name that is not the
// file's, a required expression that does not parse, names a tag no scenario carries or
// selects nothing (or not required_count scenarios), and carry-over rules with an unknown or
// repeated series, a series the required scenarios already cover entirely, no or unsafe
// paths, or no justification.
func Parse(file string, data []byte, items []runner.Item) (*Def, error) {
	p := defParser{file: file}
	doc, line, problem := yamlerr.OneMapping(data, yamlerr.Wording{
		Empty:          "the gate definition is empty",
		Syntax:         "YAML: %s",
		SecondDocument: "a second YAML document: a gate definition is one document",
		NotMapping:     "a gate definition is a mapping (schema_version, name, required, carry_over, …)",
	})
	if problem != "" {
		return nil, p.at(line, "%s", problem)
	}
	p.root = doc.Content[0]
	if err := (yamlerr.Keys{Known: gateKeys, What: "key", Twice: true}).Check(p.root, p.at); err != nil {
		return nil, err
	}
	g := &Def{File: file}
	sum := sha256.Sum256(data)
	g.SHA256 = hex.EncodeToString(sum[:])
	if err := p.header(g); err != nil {
		return nil, err
	}
	req, err := p.required(g, items)
	if err != nil {
		return nil, err
	}
	if err := p.carryOver(g, items, req); err != nil {
		return nil, err
	}
	return g, nil
}

// defParser holds what the parts of Parse share: the file, named with the line in every
// refusal, and the definition's top-level mapping.
type defParser struct {
	file string
	root *yaml.Node
}

// at refuses at a line of the definition file.
func (p defParser) at(line int, format string, a ...any) error {
	return refusal.New("%s: %s", yamlerr.Where(p.file, line), fmt.Sprintf(format, a...))
}

// scalar decodes a top-level scalar into out and returns its key's line (0 when absent).
func (p defParser) scalar(key, kind string, out any) (int, error) {
	n, kn := yamlerr.Value(p.root, key)
	if n == nil {
		return 0, nil
	}
	if n.Kind != yaml.ScalarNode {
		return n.Line, p.at(n.Line, "%s must be %s", key, kind)
	}
	if err := n.Decode(out); err != nil {
		return n.Line, p.at(n.Line, "%s must be %s", key, kind)
	}
	return kn.Line, nil
}

// header reads schema_version, the name (the file's) and the title.
func (p defParser) header(g *Def) error {
	var version int
	vl, err := p.scalar("schema_version", "an integer", &version)
	if err != nil {
		return err
	}
	if version != 1 {
		return p.at(vl, "schema_version %d, want 1", version)
	}
	nl, err := p.scalar("name", "a string", &g.Name)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p.file), ".yaml"), ".yml")
	switch {
	case g.Name == "":
		return p.at(nl, "no name (want name: %s)", base)
	case !gateNameRule.MatchString(g.Name):
		return p.at(nl, "name %q: lower-case letters, digits, '-' and '_'", g.Name)
	case g.Name != base:
		return p.at(nl, "name %q differs from the file's name %q", g.Name, base)
	}
	_, err = p.scalar("title", "a string", &g.Title)
	return err
}

// required reads the required tag expression and required_count, and returns the ids of
// the scenarios it selects: it must parse, name only known tags and select the counted
// number of scenarios (at least one).
func (p defParser) required(g *Def, items []runner.Item) ([]string, error) {
	rl, err := p.scalar("required", "a tag expression (a string)", &g.Required)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(g.Required) == "" {
		return nil, p.at(rl, "required: no tag expression (a gate requires at least one scenario)")
	}
	expr, err := tagexpr.Parse(g.Required)
	if err != nil {
		return nil, p.at(rl, "required %q: %v", g.Required, err)
	}
	g.requiredExpr = expr
	known := runner.KnownTags(items)
	for _, t := range expr.Tags() {
		if !slices.Contains(known, t) {
			hint := ""
			if c := runner.Closest(t, known, 3); len(c) > 0 {
				hint = " (closest: " + strings.Join(c, ", ") + ")"
			}
			return nil, p.at(rl, "required: unknown scenario id or series %s%s", t, hint)
		}
	}
	req := g.RequiredIDs(items)
	if len(req) == 0 {
		return nil, p.at(rl, "required %q selects no scenario of the manifest", g.Required)
	}
	cl, err := p.scalar("required_count", "an integer", &g.requiredCount)
	if err != nil {
		return nil, err
	}
	if cl > 0 && g.requiredCount != len(req) {
		return nil, p.at(cl, "required_count %d, but required %q selects %d scenarios (%s)", g.requiredCount, g.Required, len(req), strings.Join(req, ", "))
	}
	return req, nil
}

// carryOver reads the carry_over list (absent or null: none) into g.Rules; req are the
// required scenario ids.
func (p defParser) carryOver(g *Def, items []runner.Item, req []string) error {
	co, _ := yamlerr.Value(p.root, "carry_over")
	if co == nil || (co.Kind == yaml.ScalarNode && co.Tag == "!!null") {
		return nil
	}
	if co.Kind != yaml.SequenceNode {
		return p.at(co.Line, "carry_over must be a list of {series, paths, justification}")
	}
	series := map[string][]string{} // series -> ids, run order
	var seriesOrder []string
	for _, it := range items {
		if _, ok := series[it.Series]; !ok {
			seriesOrder = append(seriesOrder, it.Series)
		}
		series[it.Series] = append(series[it.Series], it.ID)
	}
	seen := map[string]int{} // series -> line of its rule
	for _, rn := range co.Content {
		r, err := p.carryRule(rn, series, seriesOrder, seen, req)
		if err != nil {
			return err
		}
		seen[r.Series] = ruleLine(rn, "series")
		g.Rules = append(g.Rules, r)
	}
	return nil
}

// carryRule reads one carry-over rule: a known series with no rule yet and not required
// entirely, safe paths, a justification.
func (p defParser) carryRule(rn *yaml.Node, series map[string][]string, seriesOrder []string, seen map[string]int, req []string) (CarryRule, error) {
	if rn.Kind != yaml.MappingNode {
		return CarryRule{}, p.at(rn.Line, "a carry-over rule is a mapping {series, paths, justification}")
	}
	if err := (yamlerr.Keys{Known: ruleKeys, What: "carry-over key", Twice: true}).Check(rn, p.at); err != nil {
		return CarryRule{}, err
	}
	var r struct {
		Series        string   `yaml:"series"`
		Paths         []string `yaml:"paths"`
		Justification string   `yaml:"justification"`
	}
	if err := rn.Decode(&r); err != nil {
		line, msg := yamlerr.Line(err)
		if line == 0 {
			line = rn.Line
		}
		return CarryRule{}, p.at(line, "carry-over rule: %s", msg)
	}
	line := func(key string) int { return ruleLine(rn, key) }
	ids, ok := series[r.Series]
	switch {
	case r.Series == "":
		return CarryRule{}, p.at(rn.Line, "carry-over rule without a series")
	case !ok:
		hint := ""
		if c := runner.Closest(r.Series, seriesOrder, 3); len(c) > 0 {
			hint = " (closest: " + strings.Join(c, ", ") + ")"
		}
		return CarryRule{}, p.at(line("series"), "carry-over: unknown series %q%s", r.Series, hint)
	}
	if prev, dup := seen[r.Series]; dup {
		return CarryRule{}, p.at(line("series"), "carry-over: series %s has a rule already (line %d)", r.Series, prev)
	}
	rest := 0
	for _, id := range ids {
		if !slices.Contains(req, id) {
			rest++
		}
	}
	if rest == 0 {
		return CarryRule{}, p.at(line("series"), "carry-over: every scenario of series %s is required, so the rule could never skip one", r.Series)
	}
	if len(r.Paths) == 0 {
		return CarryRule{}, p.at(line("paths"), "carry-over %s: no paths (which SUT paths, unchanged, justify skipping it?)", r.Series)
	}
	for _, rp := range r.Paths {
		if err := checkRulePath(rp); err != nil {
			return CarryRule{}, p.at(line("paths"), "carry-over %s: path %q: %v", r.Series, rp, err)
		}
	}
	if strings.TrimSpace(r.Justification) == "" {
		return CarryRule{}, p.at(line("justification"), "carry-over %s: no justification (the gate record quotes it)", r.Series)
	}
	return CarryRule{Series: r.Series, Paths: r.Paths, Justification: strings.TrimSpace(r.Justification)}, nil
}

// ruleLine is the line of a rule's key, or of the rule when the key is absent.
func ruleLine(rn *yaml.Node, key string) int {
	if l := yamlerr.KeyLine(rn, key); l > 0 {
		return l
	}
	return rn.Line
}

// checkRulePath: a repository-relative, clean, '/'-separated path or glob.
func checkRulePath(p string) error {
	switch {
	case strings.TrimSpace(p) == "" || p != strings.TrimSpace(p):
		return errors.New("empty or padded with spaces")
	case strings.Contains(p, `\`):
		return errors.New("use '/' as the separator")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return errors.New("must be relative to the SUT repository's root")
	}
	trimmed := strings.TrimSuffix(p, "/")
	if path.Clean(trimmed) != trimmed || trimmed == "." || strings.HasPrefix(trimmed, "../") || trimmed == ".." {
		return errors.New("not a clean path inside the repository")
	}
	if strings.ContainsAny(p, "*?[") {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("bad glob: %v", err)
		}
	}
	return nil
}

// pathCovered reports whether a changed file falls under a rule path.
func pathCovered(rule, file string) bool {
	if strings.ContainsAny(rule, "*?[") {
		ok, _ := path.Match(rule, file)
		return ok
	}
	if strings.HasSuffix(rule, "/") {
		return strings.HasPrefix(file, rule)
	}
	return file == rule || strings.HasPrefix(file, rule+"/")
}

// RequiredIDs are the ids the required expression selects, in run order.
func (g *Def) RequiredIDs(items []runner.Item) []string {
	var ids []string
	for _, it := range items {
		if g.requiredExpr.Eval(it.Tags()) {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// RuleScenarios are the scenarios a rule covers: its series minus the required ones.
func (g *Def) RuleScenarios(r CarryRule, items []runner.Item) []string {
	var ids []string
	for _, it := range items {
		if it.Series == r.Series && !g.requiredExpr.Eval(it.Tags()) {
			ids = append(ids, it.ID)
		}
	}
	return ids
}
