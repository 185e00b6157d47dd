package layering

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ksqlflow/flowtest"

// depRules is the module's order (the syntax is Rules'). Read bottom-up: helpers and the
// kintone client, the evidence, the harness, the step library, the runner, the commands.
// The sandbox is a separate tree reached only through child processes and HTTP.
const depRules = `
# Leaves: they import nothing of ours.
NONE
< internal/base/refusal, internal/base/excerpt, internal/base/yamlerr, internal/base/interrupt,
  internal/kintoneapi, internal/safety, internal/runner/tagexpr,
  internal/results/redact, internal/results/internal/mdtext,
  internal/harness/wait, internal/harness/apicount, internal/harness/stepdef,
  internal/harness/runlock, internal/harness/ksqlprofile, internal/harness/ksqlresult,
  internal/sandbox/defect, internal/steps/csv/wrapmode,
  internal/app/buildtest, internal/app/gate/gatetest, internal/results/pack/packtest,
  internal/repo/ciworkflow, internal/repo/doclinks, internal/repo/layering;

internal/base/refusal < internal/base/flagcheck;

# The evidence: the record types, the archive and its readers.
internal/results/internal/mdtext < internal/results/record < internal/results/render;
internal/results/redact, internal/results/render
< internal/results
< internal/results/merge, internal/results/pack, internal/results/evidence,
  internal/results/internal/archivetest;
internal/results/merge, internal/results/pack, internal/results/evidence < EVIDENCE;

# The harness: what a scenario drives, each piece below the steps and the runner. The
# processes and the proxies fill the record types themselves (one definition, no mirror).
internal/harness/wait, internal/results/record < internal/harness/proc;
internal/results/record < internal/harness/faultproxy;
internal/harness/faultproxy, internal/harness/wait < internal/harness/schedule;
internal/safety < internal/harness/config;
internal/harness/apicount, internal/kintoneapi, internal/safety < internal/harness/kintoneguard;
internal/harness/apicount, internal/harness/proc, internal/results < internal/harness/scenario;
internal/base/yamlerr < internal/harness/scope;
internal/harness/stepdef < internal/harness/stepindex;
internal/harness/proc, internal/kintoneapi < internal/harness/target;
internal/harness/runlock < internal/harness/workdir;
internal/harness/config, internal/harness/kintoneguard, internal/harness/ksqlprofile,
internal/harness/ksqlresult, internal/harness/scenario, internal/harness/schedule, internal/harness/scope,
internal/harness/stepindex, internal/harness/target, internal/harness/workdir
< HARNESS;

# The step library and the runner: neither imports the other; the scenario state joins them.
# The library is a tree of groups in layers: the kit at the bottom, the proxies above it,
# the operator and CSV groups beside each other, the requests over the operator, the
# invariants over all, and the root's entry points on top.
HARNESS < internal/steps/kit < internal/steps/proxy < internal/steps/operator;
internal/steps/proxy, internal/steps/csv/wrapmode < internal/steps/csv;
internal/steps/operator < internal/steps/requests < internal/steps/invariants;
internal/steps/csv, internal/steps/invariants < internal/steps;
HARNESS, internal/base/yamlerr, internal/base/interrupt, internal/runner/tagexpr < internal/runner;

# The commands, each over what it composes; the CLI over all of them.
internal/results < internal/app/budget;
internal/harness/schedule < internal/app/explorer;
internal/harness/scenario, internal/harness/target < internal/app/isolation;
internal/base/refusal, internal/base/interrupt, internal/steps/csv/wrapmode < internal/app/ksqlwrap;
internal/runner, internal/results/pack, internal/base/refusal < internal/app/gate;
internal/runner, internal/app/explorer, internal/base/refusal, internal/base/excerpt < internal/app/defects;
internal/runner, internal/base/refusal, internal/base/excerpt < internal/app/rehearse;
internal/runner, internal/harness/stepindex, internal/harness/config, internal/harness/faultproxy,
internal/harness/ksqlprofile, internal/harness/scope, internal/harness/target < internal/app/preflight;
internal/harness/kintoneguard, internal/harness/target, internal/harness/workdir, EVIDENCE,
internal/base/refusal < internal/app/sweep;
internal/app/budget, internal/app/defects, internal/app/explorer, internal/app/gate,
internal/app/isolation, internal/app/ksqlwrap, internal/app/preflight, internal/app/rehearse,
internal/app/sweep, internal/base/flagcheck, EVIDENCE, internal/runner, internal/steps
< internal/app/cli
< cmd/flowtest;

# The sandbox: the reference product and the kintone emulator behind one binary.
internal/sandbox/defect < internal/sandbox/emulator;
internal/sandbox/defect, internal/kintoneapi < internal/sandbox/flownet, internal/sandbox/ksqlflow;
internal/sandbox/emulator, internal/sandbox/flownet, internal/sandbox/ksqlflow < cmd/flowsandbox;

# What the order above implies, said outright so a reordering cannot lose it.
# flowtest carries none of the sandbox's code: a live run links no reference product.
internal/sandbox/*, cmd/flowsandbox !< cmd/flowtest, internal/app/*, internal/runner, internal/steps,
  internal/steps/*, internal/harness/*, internal/results, internal/results/*, internal/base/*;
# The sandbox knows nothing of the harness that tests it (only the shared kintone client).
internal/harness/*, internal/results, internal/results/*, internal/runner, internal/steps,
  internal/steps/*, internal/app/*, internal/base/*, internal/safety !< internal/sandbox/*;
# Lower levels never reach up into the commands, the runner or the steps.
internal/app/* !< internal/harness/*, internal/results, internal/results/*, internal/base/*,
  internal/steps, internal/steps/*, internal/runner, internal/kintoneapi, internal/safety;
internal/runner, internal/steps, internal/steps/* !< internal/harness/*, internal/results, internal/results/*;
internal/runner !< internal/steps, internal/steps/*;
internal/steps, internal/steps/* !< internal/runner;
# The step groups never reach up or sideways: the kit and the proxies know no group above
# them, CSV and the operator/request groups not each other, no group the root; the kSQL-Flow
# wrapper links its three names, not the library.
internal/steps/operator, internal/steps/requests, internal/steps/csv, internal/steps/invariants,
  internal/steps !< internal/steps/kit, internal/steps/proxy;
internal/steps/csv !< internal/steps/operator, internal/steps/requests;
internal/steps/operator, internal/steps/requests !< internal/steps/csv;
internal/steps/requests, internal/steps/invariants !< internal/steps/operator;
internal/steps/invariants !< internal/steps/requests, internal/steps/csv;
internal/steps !< internal/steps/*;
internal/steps, internal/steps/kit, internal/steps/proxy, internal/steps/operator,
  internal/steps/requests, internal/steps/csv, internal/steps/invariants !< internal/app/ksqlwrap;
# The evidence is written from records, never from the harness that made them; the record
# types are a leaf that knows nothing of either.
internal/harness/*, internal/results, internal/results/render !< internal/results/record;
# The renderers read records only: no harness below them, and the harness pieces that fill
# records never reach a page (harness/scenario still does, through results' differential).
internal/harness/*, internal/results/redact !< internal/results/render;
internal/results/render !< internal/harness/proc, internal/harness/faultproxy;
internal/harness/* !< internal/results/redact, internal/results/internal/mdtext, internal/results/pack,
  internal/results/merge, internal/results/evidence;
`

type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	r, ok := strings.CutPrefix(importPath, module+"/")
	return r, ok
}

// ours keeps the module's packages of paths, relative.
func ours(paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, ok := rel(p); ok {
			out = append(out, r)
		}
	}
	return out
}

func modulePkgs(t *testing.T) []Pkg {
	t.Helper()
	var out []Pkg
	for _, p := range listPackages(t) {
		r, _ := rel(p.ImportPath)
		out = append(out, Pkg{Path: r, Name: p.Name, Imports: ours(p.Imports), Deps: ours(p.Deps)})
	}
	return out
}

func parsedRules(t *testing.T) *Rules {
	t.Helper()
	r, err := ParseRules(depRules)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestImportRules(t *testing.T) {
	pkgs := modulePkgs(t)
	r := parsedRules(t)
	if len(pkgs) < len(r.Packages())/2 {
		t.Fatalf("go list found %d packages: not run from the module?", len(pkgs))
	}
	for _, v := range r.Violations(pkgs) {
		t.Error(v)
	}
}

// The checker itself, on a module made up for it: a step group importing one above it, a
// forbidden dependency reached through another package, a name used twice, a package the
// rules do not place and one they place that does not exist.
func TestViolationsFindsWhatTheRulesForbid(t *testing.T) {
	r, err := ParseRules(`
NONE < base, sandbox/emu;
base < steps/kit < steps/proxy < steps/operator, steps/requests;
steps/operator, steps/requests < steps;
base < gone;
sandbox/* !< steps, steps/*;
`)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := []Pkg{
		{Path: "base", Name: "base"},
		{Path: "sandbox/emu", Name: "emu"},
		{Path: "steps/kit", Name: "kit", Imports: []string{"base", "steps/operator"}, Deps: []string{"base", "steps/operator", "steps/proxy"}},
		{Path: "steps/proxy", Name: "proxy", Imports: []string{"steps/kit"}, Deps: []string{"steps/kit", "base"}},
		{Path: "steps/operator", Name: "operator", Imports: []string{"steps/proxy", "base"}, Deps: []string{"steps/proxy", "steps/kit", "base"}},
		{Path: "steps/requests", Name: "operator", Imports: []string{"steps/proxy", "sandbox/emu"}, Deps: []string{"steps/proxy", "sandbox/emu"}},
		{Path: "steps", Name: "steps", Imports: []string{"steps/operator", "steps/kit"}, Deps: []string{"steps/operator", "steps/requests", "sandbox/emu"}},
		{Path: "newpkg", Name: "newpkg"},
	}
	got := r.Violations(pkgs)
	want := []string{
		"newpkg: not placed by the rules (internal/repo/layering): place it above what it imports, and give its row in docs/layout.md",
		"package name operator is used by steps/operator, steps/requests: a name says which package it is, once",
		`steps depends on sandbox/emu, which "sandbox/* !< steps, steps/*" forbids`,
		"steps/kit imports steps/operator, which is not below it in the rules",
		`steps/requests depends on sandbox/emu, which "sandbox/* !< steps, steps/*" forbids`,
		"steps/requests imports sandbox/emu, which is not below it in the rules",
		"the rules place gone, which is not a package of the module",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The order is transitive: the root may import the kit through the groups above it.
	if !r.MayImport("steps")["steps/kit"] || r.MayImport("steps/kit")["steps/proxy"] {
		t.Fatal("MayImport does not follow the order")
	}
}

// Malformed rules are refused with the statement named, so a broken table cannot pass as an
// empty one.
func TestParseRulesRefusesMalformedRules(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"NONE < a; NONE < a;", "a is placed twice"},
		{"b < a;", "b is used before it is placed"},
		{"NONE < a/*;", "a wildcard may only end a name in a forbidding rule"},
		{"NONE < a b;", "names are separated by commas"},
		{"NONE < a; a !< b !< c;", "not a chain"},
		{"a, b;", "nothing is placed"},
		{"NONE < a; a < NONE;", "NONE is the bottom"},
		{"NONE < a, , b;", "an empty name"},
	} {
		_, err := ParseRules(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRules(%q) = %v, want an error with %q", c.text, err, c.want)
		}
	}
}
