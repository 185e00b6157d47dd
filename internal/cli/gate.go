package cli

// flowtest gate: release gates (issue 19). A gate definition (features/gates/<name>.yaml)
// names the scenarios that must pass (a tag expression) and carry-over rules: a series may be
// skipped when the SUT diff since the commit of its last passing records touches none of the
// rule's paths. `gate run` computes the scope (required ∪ every series whose rule does not
// hold), runs it through the normal run path and writes the gate record (gate.json, and the
// gate in README.md and index.html) into the run's archive.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/harness/proc"
	"github.com/ksqlflow/flowtest/internal/yamlerr"
	"github.com/ksqlflow/flowtest/results"
	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/runner/tagexpr"
)

// Exit codes of `flowtest gate run` beyond the run's: the verdict decides.
const (
	exitGatePass       = runner.ExitPassed // PASS
	exitGateFail       = runner.ExitFailed // FAIL (or the archive failed its own leak check)
	exitGateIncomplete = 3                 // INCOMPLETE: nothing failed, but not everything passed or was carried over
)

// gatesDir is where gate definitions live, inside the features directory.
const gatesDir = "gates"

// runExtras is what `flowtest gate run` adds to the run path: the gate record the archive
// completes and writes, the archive label, and the command line for run.json.
type runExtras struct {
	gate    *results.GateRecord
	label   string
	command []string
}

// archiveLabel is the archive folder's label: "gate-<name>" for a gate run, else the tags.
func (s *session) archiveLabel() string {
	if s.extras.label != "" {
		return s.extras.label
	}
	return label(s.flags.tags)
}

// gateDef is one gate definition file.
type gateDef struct {
	file          string // as the operator knows it (features/gates/r2.yaml)
	sha256        string
	name, title   string
	required      string
	requiredExpr  tagexpr.Expr
	requiredCount int
	rules         []carryRule
}

type carryRule struct {
	series        string
	paths         []string
	justification string
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

// loadGate reads and validates a gate definition against the manifest (items: every entry,
// in run order). Every error is one line naming file:line.
func loadGate(featuresDir, gate string, items []runner.Item) (*gateDef, error) {
	file := gateFile(featuresDir, gate)
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			known := knownGates(featuresDir)
			return nil, refuse("gate %q: no definition at %s (gates in %s: %s)", gate, file, filepath.Join(featuresDir, gatesDir), orNone(strings.Join(known, ", ")))
		}
		return nil, refuse("gate %q: %v", gate, err)
	}
	return parseGate(file, data, items)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// parseGate parses and validates a gate definition. It refuses YAML errors, more than one
// document, unknown keys (at any level), values of the wrong type, a name that is not the
// file's, a required expression that does not parse, names a tag no scenario carries or
// selects nothing (or not required_count scenarios), and carry-over rules with an unknown or
// repeated series, a series the required scenarios already cover entirely, no or unsafe
// paths, or no justification.
func parseGate(file string, data []byte, items []runner.Item) (*gateDef, error) {
	at := func(line int, format string, a ...any) error {
		if line > 0 {
			return refuse("%s:%d: %s", file, line, fmt.Sprintf(format, a...))
		}
		return refuse("%s: %s", file, fmt.Sprintf(format, a...))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, at(0, "the gate definition is empty")
		}
		line, msg := yamlLine(err)
		return nil, at(line, "YAML: %s", msg)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, at(extra.Line, "a second YAML document: a gate definition is one document")
	} else if !errors.Is(err, io.EOF) {
		line, msg := yamlLine(err)
		return nil, at(line, "YAML: %s", msg)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, at(doc.Line, "a gate definition is a mapping (schema_version, name, required, carry_over, …)")
	}
	root := doc.Content[0]
	if err := onlyKeys(root, gateKeys, "key", at); err != nil {
		return nil, err
	}
	g := &gateDef{file: file}
	sum := sha256.Sum256(data)
	g.sha256 = hex.EncodeToString(sum[:])
	scalar := func(key, kind string, out any) (int, error) {
		n, kn := value(root, key)
		if n == nil {
			return 0, nil
		}
		if n.Kind != yaml.ScalarNode {
			return n.Line, at(n.Line, "%s must be %s", key, kind)
		}
		if err := n.Decode(out); err != nil {
			return n.Line, at(n.Line, "%s must be %s", key, kind)
		}
		return kn.Line, nil
	}
	var version int
	vl, err := scalar("schema_version", "an integer", &version)
	if err != nil {
		return nil, err
	}
	if version != 1 {
		return nil, at(vl, "schema_version %d, want 1", version)
	}
	nl, err := scalar("name", "a string", &g.name)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".yaml"), ".yml")
	switch {
	case g.name == "":
		return nil, at(nl, "no name (want name: %s)", base)
	case !gateNameRule.MatchString(g.name):
		return nil, at(nl, "name %q: lower-case letters, digits, '-' and '_'", g.name)
	case g.name != base:
		return nil, at(nl, "name %q differs from the file's name %q", g.name, base)
	}
	if _, err := scalar("title", "a string", &g.title); err != nil {
		return nil, err
	}
	rl, err := scalar("required", "a tag expression (a string)", &g.required)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(g.required) == "" {
		return nil, at(rl, "required: no tag expression (a gate requires at least one scenario)")
	}
	expr, err := tagexpr.Parse(g.required)
	if err != nil {
		return nil, at(rl, "required %q: %v", g.required, err)
	}
	g.requiredExpr = expr
	known := runner.KnownTags(items)
	for _, t := range expr.Tags() {
		if !slices.Contains(known, t) {
			hint := ""
			if c := runner.Closest(t, known, 3); len(c) > 0 {
				hint = " (closest: " + strings.Join(c, ", ") + ")"
			}
			return nil, at(rl, "required: unknown scenario id or series %s%s", t, hint)
		}
	}
	req := g.requiredIDs(items)
	if len(req) == 0 {
		return nil, at(rl, "required %q selects no scenario of the manifest", g.required)
	}
	cl, err := scalar("required_count", "an integer", &g.requiredCount)
	if err != nil {
		return nil, err
	}
	if cl > 0 && g.requiredCount != len(req) {
		return nil, at(cl, "required_count %d, but required %q selects %d scenarios (%s)", g.requiredCount, g.required, len(req), strings.Join(req, ", "))
	}

	series := map[string][]string{} // series -> ids, run order
	var seriesOrder []string
	for _, it := range items {
		if _, ok := series[it.Series]; !ok {
			seriesOrder = append(seriesOrder, it.Series)
		}
		series[it.Series] = append(series[it.Series], it.ID)
	}
	co, _ := value(root, "carry_over")
	if co != nil && !(co.Kind == yaml.ScalarNode && co.Tag == "!!null") {
		if co.Kind != yaml.SequenceNode {
			return nil, at(co.Line, "carry_over must be a list of {series, paths, justification}")
		}
		seen := map[string]int{}
		for _, rn := range co.Content {
			if rn.Kind != yaml.MappingNode {
				return nil, at(rn.Line, "a carry-over rule is a mapping {series, paths, justification}")
			}
			if err := onlyKeys(rn, ruleKeys, "carry-over key", at); err != nil {
				return nil, err
			}
			var r struct {
				Series        string   `yaml:"series"`
				Paths         []string `yaml:"paths"`
				Justification string   `yaml:"justification"`
			}
			if err := rn.Decode(&r); err != nil {
				line, msg := yamlLine(err)
				if line == 0 {
					line = rn.Line
				}
				return nil, at(line, "carry-over rule: %s", msg)
			}
			line := func(key string) int {
				if _, k := value(rn, key); k != nil {
					return k.Line
				}
				return rn.Line
			}
			ids, ok := series[r.Series]
			switch {
			case r.Series == "":
				return nil, at(rn.Line, "carry-over rule without a series")
			case !ok:
				hint := ""
				if c := runner.Closest(r.Series, seriesOrder, 3); len(c) > 0 {
					hint = " (closest: " + strings.Join(c, ", ") + ")"
				}
				return nil, at(line("series"), "carry-over: unknown series %q%s", r.Series, hint)
			}
			if prev, dup := seen[r.Series]; dup {
				return nil, at(line("series"), "carry-over: series %s has a rule already (line %d)", r.Series, prev)
			}
			seen[r.Series] = line("series")
			rest := 0
			for _, id := range ids {
				if !slices.Contains(req, id) {
					rest++
				}
			}
			if rest == 0 {
				return nil, at(line("series"), "carry-over: every scenario of series %s is required, so the rule could never skip one", r.Series)
			}
			if len(r.Paths) == 0 {
				return nil, at(line("paths"), "carry-over %s: no paths (which SUT paths, unchanged, justify skipping it?)", r.Series)
			}
			for _, p := range r.Paths {
				if err := checkRulePath(p); err != nil {
					return nil, at(line("paths"), "carry-over %s: path %q: %v", r.Series, p, err)
				}
			}
			if strings.TrimSpace(r.Justification) == "" {
				return nil, at(line("justification"), "carry-over %s: no justification (the gate record quotes it)", r.Series)
			}
			g.rules = append(g.rules, carryRule{series: r.Series, paths: r.Paths, justification: strings.TrimSpace(r.Justification)})
		}
	}
	return g, nil
}

// onlyKeys refuses keys of mapping m outside known, naming the line.
func onlyKeys(m *yaml.Node, known []string, what string, at func(int, string, ...any) error) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind != yaml.ScalarNode {
			return at(k.Line, "a %s must be a name", what)
		}
		if !slices.Contains(known, k.Value) {
			return at(k.Line, "unknown %s %q (known: %s)", what, k.Value, strings.Join(known, ", "))
		}
		for j := 0; j < i; j += 2 {
			if m.Content[j].Value == k.Value {
				return at(k.Line, "%s %q given twice (first at line %d)", what, k.Value, m.Content[j].Line)
			}
		}
	}
	return nil
}

// value returns the value node of key in mapping m, and its key node.
func value(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1], m.Content[i]
		}
	}
	return nil, nil
}

// yamlLine is the 1-based line a yaml.v3 error names and its message on one line.
func yamlLine(err error) (int, string) { return yamlerr.Line(err) }

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

// requiredIDs are the ids the required expression selects, in run order.
func (g *gateDef) requiredIDs(items []runner.Item) []string {
	var ids []string
	for _, it := range items {
		if g.requiredExpr.Eval(it.Tags()) {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// ruleScenarios are the scenarios a rule covers: its series minus the required ones.
func (g *gateDef) ruleScenarios(r carryRule, items []runner.Item) []string {
	var ids []string
	for _, it := range items {
		if it.Series == r.series && !g.requiredExpr.Eval(it.Tags()) {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// splitGateName takes the gate's name from the front of args (`gate run r2 --flags`) or, after
// the flags, as the one positional argument.
func splitGateName(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

func cmdGateShow(args []string, stdout, stderr io.Writer) int {
	name, rest := splitGateName(args)
	fset := flag.NewFlagSet("gate show", flag.ContinueOnError)
	features := fset.String("features", "features", "directory of feature files, the run-order manifest and gates/")
	all := fset.Bool("all", false, "also list the scenarios of the carry-over series (the scope when no rule holds)")
	if _, code, ok := parseFlags(fset, "gate show", rest, stderr); !ok {
		return code
	}
	if name == "" && fset.NArg() == 1 {
		name = fset.Arg(0)
	} else if fset.NArg() > 0 || name == "" {
		fmt.Fprintln(stderr, "usage: flowtest gate show [--all] <gate>")
		return runner.ExitRefused
	}
	c := common{target: "sandbox", features: *features}
	items, _, _, err := c.plan()
	if err != nil {
		return exitFor(stderr, "gate show", err)
	}
	g, err := loadGate(*features, name, items)
	if err != nil {
		return exitFor(stderr, "gate show", err)
	}
	req := g.requiredIDs(items)
	inScope := map[string]bool{}
	for _, id := range req {
		inScope[id] = true
	}
	if *all {
		for _, r := range g.rules {
			for _, id := range g.ruleScenarios(r, items) {
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
	fmt.Fprintf(stderr, "# gate %s (%s, sha256 %.12s): %s\n", g.name, g.file, g.sha256, g.title)
	fmt.Fprintf(stderr, "# required: %s — %d scenarios\n", g.required, len(req))
	for _, r := range g.rules {
		fmt.Fprintf(stderr, "# carry-over %s (%d scenarios) when the SUT diff touches none of: %s\n", r.series, len(g.ruleScenarios(r, items)), strings.Join(r.paths, ", "))
	}
	fmt.Fprintf(stderr, "# listed: %d, of which %d have a feature file today\n", len(inScope), implemented)
	return 0
}

// gateOnlyFlags are gate run's own flags; the others go to the run path.
var gateOnlyFlags = []string{"sut-repo", "since-archive"}

func cmdGateRun(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	name, rest := splitGateName(args)
	fset := flag.NewFlagSet("gate run", flag.ContinueOnError)
	var f runFlags
	f.bind(fset, true)
	sutRepo := fset.String("sut-repo", "", "the SUT's git repository: the carry-over rules read `git diff --stat` there (required)")
	since := fset.String("since-archive", "", "archive of the last accepting run: carried-over scenarios point to their passing records there")
	uses, code, ok := parseFlags(fset, "gate run", rest, stderr, "format")
	if !ok {
		return code
	}
	if name == "" && fset.NArg() == 1 {
		name = fset.Arg(0)
	} else if fset.NArg() > 0 || name == "" {
		fmt.Fprintln(stderr, "usage: flowtest gate run <gate> --sut-commit C --sut-repo DIR [--since-archive A] [run flags]")
		return runner.ExitRefused
	}
	// --durations-from stays: without --shard it only gives the progress line its ETA.
	for _, bad := range []string{"tags", "rerun", "allow-empty", "repeat", "shard"} {
		if _, given := uses[bad]; given {
			fmt.Fprintf(stderr, "flowtest gate run: --%s cannot be given: the gate definition and its carry-over rules decide what runs\n", bad)
			return runner.ExitRefused
		}
	}
	switch {
	case strings.TrimSpace(f.sutCommit) == "":
		fmt.Fprintln(stderr, "flowtest gate run: --sut-commit is required: the gate record is for one commit of the SUT")
		return runner.ExitRefused
	case strings.TrimSpace(*sutRepo) == "":
		fmt.Fprintln(stderr, "flowtest gate run: --sut-repo is required: the SUT's git repository, where the carry-over rules read the diff")
		return runner.ExitRefused
	}
	c := f.common
	c.tags, c.rerun = "", ""
	items, _, _, err := c.plan()
	if err != nil {
		return exitFor(stderr, "gate run", err)
	}
	g, err := loadGate(f.features, name, items)
	if err != nil {
		return exitFor(stderr, "gate run", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec, runIDs, err := planGate(ctx, g, items, f.target, f.sutCommit, *sutRepo, *since)
	if err != nil {
		return exitFor(stderr, "gate run", err)
	}
	writeGatePlan(stdout, rec, runIDs)

	// The run path, with the scope as its selection and the resolved commit.
	var fwd []string
	for _, n := range sortedNames(uses) {
		if slices.Contains(gateOnlyFlags, n) || n == "sut-commit" {
			continue
		}
		for _, v := range uses[n].values {
			fwd = append(fwd, "--"+n+"="+v)
		}
	}
	tags := make([]string, len(runIDs))
	for i, id := range runIDs {
		tags[i] = "@" + id
	}
	fwd = append(fwd, "--tags", strings.Join(tags, " or "), "--sut-commit", rec.SUT.Commit)
	command := append([]string{"flowtest", "gate", "run", name}, rest...)
	code = runCommand("gate run", fwd, stdout, stderr, sigs, runExtras{gate: rec, label: "gate-" + g.name, command: command})
	if f.dryRun {
		return code // the plan above and the run's dry run: nothing ran, no record
	}
	if rec.Verdict == "" || code == runner.ExitRefused || code == runner.ExitInterrupted {
		if code != runner.ExitRefused && rec.Verdict == "" {
			fmt.Fprintf(stdout, "gate %s: no verdict (the run ended before its record was written)\n", g.name)
		}
		return code
	}
	fmt.Fprintf(stdout, "gate %s: %s — %s\n", g.name, rec.Verdict, rec.VerdictWhy)
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

// planGate decides the gate's scope and builds its record: the required scenarios run; each
// carry-over series is carried over when its rule holds (every scenario of it has a passing
// record in the --since-archive archive, or carried over there with a record that still
// matches its sha256, made on the same target, and the SUT diff from the commit of those
// records to commit touches none of the rule's paths), and runs otherwise. It returns the
// record (statuses of what runs left empty) and the ids to run, in run order.
func planGate(ctx context.Context, g *gateDef, items []runner.Item, target, commit, repo, since string) (*results.GateRecord, []string, error) {
	git := gitRepo{dir: repo}
	if st, err := os.Stat(repo); err != nil || !st.IsDir() {
		return nil, nil, refuse("--sut-repo %q: not a directory", repo)
	}
	head, err := git.resolve(ctx, commit)
	if err != nil {
		return nil, nil, refuse("--sut-commit %q: %v", commit, err)
	}
	rec := &results.GateRecord{
		SchemaVersion: results.SchemaVersion, Gate: g.name, Title: g.title, Definition: g.file,
		DefinitionSHA256: g.sha256, Required: g.required, SUT: results.GateSUT{Commit: head, Given: commit},
		CarryOver: []results.CarryOverRule{},
	}
	if h, err := git.resolve(ctx, "HEAD"); err == nil && h != head {
		rec.SUT.Head = h
	}
	var ev *sinceEvidence
	if since != "" {
		ev, err = readSince(since)
		if err != nil {
			return nil, nil, refuse("--since-archive %q: %v", since, err)
		}
		rec.Since = &ev.since
	}
	required := map[string]bool{}
	for _, id := range g.requiredIDs(items) {
		required[id] = true
	}
	carried := map[string]*results.CarriedOver{}
	diffs := map[string]results.GateDiff{} // by base commit
	diffErr := map[string]error{}
	for _, r := range g.rules {
		ids := g.ruleScenarios(r, items)
		out := results.CarryOverRule{Series: r.series, Paths: r.paths, Justification: r.justification, Scenarios: ids}
		holds, why := true, ""
		var found []*results.CarriedOver
		switch {
		case ev == nil:
			holds, why = false, "no --since-archive: there is no earlier passing record to carry over"
		case ev.since.Target != target:
			holds, why = false, fmt.Sprintf("the --since-archive run was on target %q, this gate runs on %q: evidence does not carry across targets", ev.since.Target, target)
		default:
			for _, id := range ids {
				co, problem := ev.evidenceFor(id)
				if problem != "" {
					holds, why = false, id+": "+problem
					break
				}
				found = append(found, co)
			}
		}
		bases := map[string]bool{}
		var baseOrder []string
		if holds {
			for _, co := range found {
				if co.Commit == "" {
					holds, why = false, fmt.Sprintf("the record of %s names no SUT commit (its run had no --sut-commit), so no diff can justify skipping it", co.Record)
					break
				}
				if !bases[co.Commit] {
					bases[co.Commit] = true
					baseOrder = append(baseOrder, co.Commit)
				}
			}
		}
		var touched []string
		if holds {
			for _, base := range baseOrder {
				d, ok := diffs[base]
				if !ok && diffErr[base] == nil {
					d, err = git.diff(ctx, base, head)
					if err != nil {
						diffErr[base] = err
					} else {
						diffs[base] = d
					}
				}
				if e := diffErr[base]; e != nil {
					holds, why = false, fmt.Sprintf("cannot diff the SUT from %s: %v", base, e)
					break
				}
				dd := d
				dd.Touched = nil
				for _, f := range d.Touched { // Touched holds every changed file here
					for _, p := range r.paths {
						if pathCovered(p, f) {
							dd.Touched = append(dd.Touched, f)
							break
						}
					}
				}
				touched = append(touched, dd.Touched...)
				out.Diffs = append(out.Diffs, dd)
			}
		}
		if holds && len(touched) > 0 {
			holds = false
			shown := touched
			if len(shown) > 5 {
				shown = append(append([]string(nil), shown[:5]...), fmt.Sprintf("… (%d files)", len(touched)))
			}
			why = "the SUT diff touches " + strings.Join(shown, ", ")
		}
		if holds {
			why = fmt.Sprintf("none of %s changed between %s and %s; every scenario of %s has a passing record to point to", strings.Join(r.paths, ", "), strings.Join(shortAll(baseOrder), ", "), short(head), r.series)
			for i, id := range ids { // found[i] is the evidence of ids[i]
				co := found[i]
				co.Series, co.Justification = r.series, r.justification
				for _, d := range out.Diffs {
					if d.Base == co.Commit {
						co.DiffCommand, co.DiffStat = d.Command, d.Stat
					}
				}
				carried[id] = co
			}
		}
		out.Holds, out.Why = holds, why
		rec.CarryOver = append(rec.CarryOver, out)
	}
	inRule := map[string]bool{}
	for _, r := range g.rules {
		for _, id := range g.ruleScenarios(r, items) {
			inRule[id] = true
		}
	}
	var runIDs []string
	for _, it := range items {
		if !required[it.ID] && !inRule[it.ID] {
			continue
		}
		gs := results.GateScenario{ID: it.ID, Series: it.Series, Required: required[it.ID]}
		if co := carried[it.ID]; co != nil {
			gs.Status, gs.CarriedOver = results.StatusCarriedOver, co
			gs.Why = "carried over: last passed in " + co.Archive + " at commit " + short(co.Commit)
		} else {
			runIDs = append(runIDs, it.ID)
		}
		rec.Scenarios = append(rec.Scenarios, gs)
	}
	return rec, runIDs, nil
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

func shortAll(cs []string) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = short(c)
	}
	return out
}

// sinceEvidence is what --since-archive offers: passing records, and (for a gate archive)
// records it carried over itself.
type sinceEvidence struct {
	dir     string
	since   results.GateSince
	run     *results.Run
	records map[string]*results.Scenario
	files   map[string]string
	gate    *results.GateRecord
}

func readSince(dir string) (*sinceEvidence, error) {
	if results.IsPack(dir) {
		return nil, errors.New("a pack: unpack it (tar -xzf) and pass the folder; `flowtest archive verify` checks it first")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	scen, run, err := results.ReadArchive(abs)
	if err != nil {
		return nil, err
	}
	if run == nil {
		return nil, errors.New("it has no run.json: the run never finished writing it")
	}
	gate, err := results.ReadGate(abs)
	if err != nil {
		return nil, err
	}
	ev := &sinceEvidence{dir: abs, run: run, records: map[string]*results.Scenario{}, files: map[string]string{}, gate: gate,
		since: results.GateSince{Archive: abs, Commit: run.SUT.Commit, Target: run.Target}}
	if gate != nil {
		ev.since.Gate, ev.since.Verdict = gate.Gate, gate.Verdict
	}
	for _, s := range scen {
		ev.records[s.ID] = s
	}
	for _, s := range run.Scenarios {
		if s.File != "" {
			ev.files[s.ID] = s.File
		}
	}
	return ev, nil
}

// evidenceFor finds where scenario id last passed: its record in this archive, or the record
// this archive carried it over from (checked against its sha256 again). problem says why
// there is none.
func (ev *sinceEvidence) evidenceFor(id string) (*results.CarriedOver, string) {
	if s := ev.records[id]; s != nil && s.Status == results.StatusPassed {
		file := ev.files[id]
		if file == "" {
			file = results.ScenarioDir + "/" + results.SanitizeLabel(id) + ".json"
		}
		sum, err := results.FileSHA256(filepath.Join(ev.dir, filepath.FromSlash(file)))
		if err != nil {
			return nil, "its passing record cannot be read: " + err.Error()
		}
		return &results.CarriedOver{Archive: ev.dir, Commit: ev.run.SUT.Commit, Target: ev.run.Target, Record: file, SHA256: sum, Passed: s.End}, ""
	}
	if ev.gate != nil {
		for _, gs := range ev.gate.Scenarios {
			if gs.ID != id || gs.Status != results.StatusCarriedOver || gs.CarriedOver == nil {
				continue
			}
			prev := *gs.CarriedOver
			sum, err := results.FileSHA256(filepath.Join(prev.Archive, filepath.FromSlash(prev.Record)))
			switch {
			case err != nil:
				return nil, fmt.Sprintf("carried over in %s from %s/%s, which cannot be read now: %v", ev.dir, prev.Archive, prev.Record, err)
			case sum != prev.SHA256:
				return nil, fmt.Sprintf("carried over in %s from %s/%s, whose sha256 is now %s, not %s: the record changed", ev.dir, prev.Archive, prev.Record, sum, prev.SHA256)
			}
			return &results.CarriedOver{Archive: prev.Archive, Commit: prev.Commit, Target: prev.Target, Record: prev.Record, SHA256: prev.SHA256, Passed: prev.Passed}, ""
		}
	}
	if s := ev.records[id]; s != nil {
		return nil, fmt.Sprintf("it did not pass in %s (%s)", ev.dir, s.Status)
	}
	return nil, "no record of it in " + ev.dir
}

// gitRepo runs git in the SUT repository as a child process with an explicit environment:
// no user or system git configuration, no pager, no prompt, C locale.
type gitRepo struct{ dir string }

func gitEnv() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"LC_ALL=C",
	}
	if runtime.GOOS == "windows" {
		// Windows programs need these to start at all.
		for _, k := range []string{"SYSTEMROOT", "SystemRoot", "PATHEXT", "TEMP", "TMP"} {
			if v := os.Getenv(k); v != "" {
				env = append(env, k+"="+v)
			}
		}
	}
	return env
}

func (g gitRepo) run(ctx context.Context, args ...string) (string, error) {
	full := append([]string{"-C", g.dir, "-c", "core.quotepath=off"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := proc.RunBound(cmd); err != nil { // dies with the runner, like every child
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return out.String(), nil
}

// resolve turns a commit-ish into its full commit id.
func (g gitRepo) resolve(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("%q is not a commit", rev)
	}
	out, err := g.run(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("not a commit of %s", g.dir)
	}
	return strings.TrimSpace(out), nil
}

// diff is `git diff --stat` from base to head (quoted in the record) and the list of every
// changed file (both sides of a rename: renames are not detected, so a file moved out of a
// rule's path counts as a change there).
func (g gitRepo) diff(ctx context.Context, base, head string) (results.GateDiff, error) {
	b, err := g.resolve(ctx, base)
	if err != nil {
		return results.GateDiff{}, err
	}
	statArgs := []string{"diff", "--no-renames", "--stat=200,160", b, head, "--"}
	stat, err := g.run(ctx, statArgs...)
	if err != nil {
		return results.GateDiff{}, err
	}
	names, err := g.run(ctx, "diff", "--no-renames", "--name-only", "-z", b, head, "--")
	if err != nil {
		return results.GateDiff{}, err
	}
	d := results.GateDiff{Base: b, Head: head, Command: "git " + strings.Join(statArgs[:len(statArgs)-1], " "), Stat: stat}
	for _, n := range strings.Split(names, "\x00") {
		if n != "" {
			d.Touched = append(d.Touched, n)
		}
	}
	return d, nil
}
