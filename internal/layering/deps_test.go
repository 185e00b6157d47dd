package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/ksqlflow/flowtest"

// rules: for each package of the module (relative path), the packages of the module it may
// import directly (non-test imports). "dir/*" allows every package below dir. Arrows stay one
// way: cmd → internal/cli → (internal/*, runner, steps) → harness → (safety, results,
// kintoneapi); sandbox/* imports kintoneapi (and its defect switches) only, and is reached by
// the runner through child processes and HTTP, never imported.
var rules = map[string][]string{
	"kintoneapi":                   {},
	"safety":                       {},
	"results":                      {"results/internal/mdtext", "results/redact"},
	"results/redact":               {},
	"results/internal/mdtext":      {},
	"results/internal/archivetest": {"results", "results/redact"},
	"results/pack":                 {"results", "results/redact"},
	"results/pack/packtest":        {},
	"results/merge":                {"results"},
	"results/evidence":             {"results", "results/internal/mdtext"},
	"internal/yamlerr":             {},
	"internal/ciworkflow":          {},
	"internal/layering":            {},
	"internal/doclinks":            {},
	"runner/tagexpr":               {},
	"harness/wait":                 {},
	"harness/apicount":             {},
	"harness/stepdef":              {},
	"harness/runlock":              {},
	"harness/faultproxy":           {},
	"harness/explore":              {"harness/faultproxy", "harness/wait"},
	"internal/explorer":            {"harness/explore"},
	"harness/ksqlprofile":          {},
	"harness/config":               {"safety"},
	"harness/kintone":              {"harness/apicount", "kintoneapi", "safety"},
	"harness/proc":                 {"harness/wait"},
	"harness/scenario":             {"harness/apicount", "harness/proc", "harness/wait", "results"},
	"harness/scope":                {"internal/yamlerr"},
	"harness/stepindex":            {"harness/stepdef"},
	"harness/target":               {"harness/proc", "kintoneapi"},
	"harness/workdir":              {"harness/runlock"},
	"runner":                       {"harness/apicount", "harness/explore", "harness/scenario", "harness/stepdef", "harness/wait", "internal/yamlerr", "results", "runner/tagexpr"},
	"steps":                        {"harness/*", "kintoneapi", "results", "safety"},
	"sandbox/defect":               {},
	"sandbox/kintone":              {"sandbox/defect"},
	"sandbox/flownet":              {"kintoneapi", "sandbox/defect"},
	"sandbox/ksqlflow":             {"kintoneapi", "sandbox/defect"},
	"cmd/flowsandbox":              {"sandbox/*"},
	"internal/refusal":             {},
	"internal/budget":              {"results"},
	"internal/excerpt":             {},
	"internal/gate/gatetest":       {},
	"internal/gate":                {"harness/proc", "internal/refusal", "internal/yamlerr", "results", "results/pack", "runner", "runner/tagexpr"},
	"internal/defects":             {"harness/explore", "harness/proc", "internal/excerpt", "internal/explorer", "internal/refusal", "results", "runner"},
	"internal/preflight":           {"harness/apicount", "harness/config", "harness/faultproxy", "harness/ksqlprofile", "harness/proc", "harness/scope", "harness/stepdef", "harness/stepindex", "harness/target", "kintoneapi", "runner", "safety"},
	"internal/rehearse":            {"harness/proc", "harness/wait", "harness/workdir", "internal/excerpt", "internal/refusal", "results", "runner"},
	"internal/isolation":           {"harness/scenario", "harness/target"},
	"internal/ksqlwrap":            {"internal/refusal", "steps"},
	"internal/buildtest":           {},
	"internal/flagcheck":           {"internal/refusal"},
	"internal/sweep":               {"harness/kintone", "harness/target", "harness/workdir", "internal/refusal", "kintoneapi", "results", "results/redact"},
	"internal/cli": {"harness/*", "internal/budget", "internal/defects", "internal/excerpt", "internal/explorer", "internal/flagcheck", "internal/gate", "internal/isolation", "internal/ksqlwrap",
		"internal/preflight", "internal/refusal", "internal/rehearse", "internal/sweep", "kintoneapi", "results", "results/*", "runner", "runner/*", "safety", "steps"},
	// The binary's main only wires the process (keeper hook, signals, profiles) to the CLI.
	"cmd/flowtest": {"harness/proc", "internal/cli"},
}

type pkg struct {
	ImportPath string
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

func allowed(rule []string, imp string) bool {
	for _, a := range rule {
		if dir, ok := strings.CutSuffix(a, "/*"); ok {
			if strings.HasPrefix(imp, dir+"/") {
				return true
			}
		} else if a == imp {
			return true
		}
	}
	return false
}

// violations lists every import of a module package that its row does not allow, and every
// package without a row.
func violations(pkgs []pkg, rules map[string][]string) []string {
	var bad []string
	for _, p := range pkgs {
		name, _ := rel(p.ImportPath)
		rule, ok := rules[name]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no row in the import rules (internal/layering): add one, with why in docs/layout.md", name))
			continue
		}
		for _, imp := range p.Imports {
			r, ours := rel(imp)
			if ours && !allowed(rule, r) {
				bad = append(bad, fmt.Sprintf("%s imports %s, which its row does not allow", name, r))
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < len(rules)/2 {
		t.Fatalf("go list found %d packages: not run from the module?", len(pkgs))
	}
	for _, v := range violations(pkgs, rules) {
		t.Error(v)
	}
	// A row for a package that no longer exists is a stale rule.
	have := map[string]bool{}
	for _, p := range pkgs {
		n, _ := rel(p.ImportPath)
		have[n] = true
	}
	for name := range rules {
		if !have[name] {
			t.Errorf("rule for %s, which is not a package of the module any more", name)
		}
	}
}

// The flowtest binary links no sandbox package, directly or through another one: the sandbox
// is reached as a child process and over HTTP, so a live run carries none of its code.
func TestFlowtestLinksNoSandbox(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"/cmd/flowtest" {
			continue
		}
		for _, d := range p.Deps {
			if r, ours := rel(d); ours && (r == "sandbox" || strings.HasPrefix(r, "sandbox/")) {
				t.Errorf("cmd/flowtest links %s", r)
			}
		}
		return
	}
	t.Fatal("cmd/flowtest not found by go list")
}

// The checker itself: a forbidden import, a package without a row and a glob are judged as
// the rules say.
func TestViolationsFindsForbiddenImports(t *testing.T) {
	pkgs := []pkg{
		{ImportPath: module + "/results", Imports: []string{"fmt", module + "/runner"}},
		{ImportPath: module + "/steps", Imports: []string{module + "/harness/wait", module + "/sandbox/flownet"}},
		{ImportPath: module + "/newpkg"},
	}
	got := violations(pkgs, rules)
	want := []string{
		"newpkg: no row in the import rules (internal/layering): add one, with why in docs/layout.md",
		"results imports runner, which its row does not allow",
		"steps imports sandbox/flownet, which its row does not allow",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !allowed([]string{"harness/*"}, path.Join("harness", "proc")) || allowed([]string{"harness/*"}, "harnessx/proc") {
		t.Fatal("glob rule")
	}
}
