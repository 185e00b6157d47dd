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
// way: cmd → internal/app/cli → (internal/*, runner, steps) → harness → (safety, results,
// kintoneapi); sandbox/* imports kintoneapi (and its defect switches) only, and is reached by
// the runner through child processes and HTTP, never imported.
var rules = map[string][]string{
	"internal/kintoneapi":                   {},
	"internal/safety":                       {},
	"internal/results":                      {"internal/results/internal/mdtext", "internal/results/redact"},
	"internal/results/redact":               {},
	"internal/results/internal/mdtext":      {},
	"internal/results/internal/archivetest": {"internal/results", "internal/results/redact"},
	"internal/results/pack":                 {"internal/results", "internal/results/redact"},
	"internal/results/pack/packtest":        {},
	"internal/results/merge":                {"internal/results"},
	"internal/results/evidence":             {"internal/results", "internal/results/internal/mdtext"},
	"internal/base/yamlerr":                 {},
	"internal/repo/ciworkflow":              {},
	"internal/repo/layering":                {},
	"internal/repo/doclinks":                {},
	"internal/runner/tagexpr":               {},
	"internal/harness/wait":                 {},
	"internal/harness/apicount":             {},
	"internal/harness/stepdef":              {},
	"internal/harness/runlock":              {},
	"internal/harness/faultproxy":           {},
	"internal/harness/schedule":             {"internal/harness/faultproxy", "internal/harness/wait"},
	"internal/app/explorer":                 {"internal/harness/schedule"},
	"internal/harness/ksqlprofile":          {},
	"internal/harness/config":               {"internal/safety"},
	"internal/harness/kintoneguard":         {"internal/harness/apicount", "internal/kintoneapi", "internal/safety"},
	"internal/harness/proc":                 {"internal/harness/wait"},
	"internal/harness/scenario":             {"internal/harness/apicount", "internal/harness/proc", "internal/harness/wait", "internal/results"},
	"internal/harness/scope":                {"internal/base/yamlerr"},
	"internal/harness/stepindex":            {"internal/harness/stepdef"},
	"internal/harness/target":               {"internal/harness/proc", "internal/kintoneapi"},
	"internal/harness/workdir":              {"internal/harness/runlock"},
	"internal/runner":                       {"internal/harness/apicount", "internal/harness/schedule", "internal/harness/scenario", "internal/harness/stepdef", "internal/harness/wait", "internal/base/yamlerr", "internal/results", "internal/runner/tagexpr"},
	"internal/steps":                        {"internal/harness/*", "internal/kintoneapi", "internal/results", "internal/safety"},
	"internal/sandbox/defect":               {},
	"internal/sandbox/emulator":             {"internal/sandbox/defect"},
	"internal/sandbox/flownet":              {"internal/kintoneapi", "internal/sandbox/defect"},
	"internal/sandbox/ksqlflow":             {"internal/kintoneapi", "internal/sandbox/defect"},
	"cmd/flowsandbox":                       {"internal/sandbox/*"},
	"internal/base/refusal":                 {},
	"internal/app/budget":                   {"internal/results"},
	"internal/base/excerpt":                 {},
	"internal/app/gate/gatetest":            {},
	"internal/app/gate":                     {"internal/harness/proc", "internal/base/refusal", "internal/base/yamlerr", "internal/results", "internal/results/pack", "internal/runner", "internal/runner/tagexpr"},
	"internal/app/defects":                  {"internal/harness/schedule", "internal/harness/proc", "internal/base/excerpt", "internal/app/explorer", "internal/base/refusal", "internal/results", "internal/runner"},
	"internal/app/preflight":                {"internal/harness/apicount", "internal/harness/config", "internal/harness/faultproxy", "internal/harness/ksqlprofile", "internal/harness/proc", "internal/harness/scope", "internal/harness/stepdef", "internal/harness/stepindex", "internal/harness/target", "internal/kintoneapi", "internal/runner", "internal/safety"},
	"internal/app/rehearse":                 {"internal/harness/proc", "internal/harness/wait", "internal/harness/workdir", "internal/base/excerpt", "internal/base/refusal", "internal/results", "internal/runner"},
	"internal/app/isolation":                {"internal/harness/scenario", "internal/harness/target"},
	"internal/app/ksqlwrap":                 {"internal/base/refusal", "internal/steps"},
	"internal/app/buildtest":                {},
	"internal/base/flagcheck":               {"internal/base/refusal"},
	"internal/app/sweep":                    {"internal/harness/kintoneguard", "internal/harness/target", "internal/harness/workdir", "internal/base/refusal", "internal/kintoneapi", "internal/results", "internal/results/redact"},
	"internal/app/cli": {"internal/harness/*", "internal/app/budget", "internal/app/defects", "internal/base/excerpt", "internal/app/explorer", "internal/base/flagcheck", "internal/app/gate", "internal/app/isolation", "internal/app/ksqlwrap",
		"internal/app/preflight", "internal/base/refusal", "internal/app/rehearse", "internal/app/sweep", "internal/kintoneapi", "internal/results", "internal/results/*", "internal/runner", "internal/runner/*", "internal/safety", "internal/steps"},
	// The binary's main only wires the process (keeper hook, signals, profiles) to the CLI.
	"cmd/flowtest": {"internal/harness/proc", "internal/app/cli"},
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
