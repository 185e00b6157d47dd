package defects

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"gopkg.in/yaml.v3"
)

// modulePath is the module whose root `flowtest defects` must run in: it builds the sandbox
// from source.
const modulePath = "github.com/ksqlflow/flowtest"

// CatalogueFile is the defect catalogue, relative to the module root.
var CatalogueFile = filepath.Join("internal", "sandbox", "defect", "defects.yaml")

// defectCatalogue is internal/sandbox/defect/defects.yaml.
type defectCatalogue struct {
	Defects []Defect `yaml:"defects"`
}

// Defect is one catalogue entry.
type Defect struct {
	Name        string `yaml:"name"`
	Component   string `yaml:"component"`
	Description string `yaml:"description"`
	// Fast defects run in CI (`go test` → `flowtest defects --fast`); the rest only in
	// `make defects`.
	Fast    bool    `yaml:"fast"`
	Catches []Catch `yaml:"catches"`
	// Awaiting names scenarios, not implemented yet, that will catch the defect. A defect
	// with no catches yet is reported as "not yet covered", never as caught.
	Awaiting  []string     `yaml:"awaiting"`
	UnitTests []defectUnit `yaml:"unit_tests"`
	// Explore declares a race defect: `flowtest run` of the scenario passes it (the fixed
	// suite misses it) and `flowtest explore` finds it within the budget (explorecatch.go).
	Explore *ExploreCatch `yaml:"explore"`
	// exploreNotRun is the Explore that --fast took out (Select): shown as not run.
	exploreNotRun *ExploreCatch
}

// Catch is one scenario that must catch a defect, and how.
type Catch struct {
	Scenario string `yaml:"scenario"`
	// Assertion is a substring of the `what` of the scenario's first failing assertion, or
	// of its failing step's error.
	Assertion string `yaml:"assertion"`
	// Seen, when set, must also occur in that assertion's `seen` (or the step error): it
	// pins the reason when the assertion alone could fail for another one.
	Seen string `yaml:"seen"`
	// ExpectedCodes are codes the crash rule would take for a crash (a kintone error code on
	// stderr, a repository code of FlowNet's) that this scenario's correct run prints on
	// purpose: its fault proxy answers with that kintone code, or the contract's answer to the
	// fault is that code (AUDIT_CONFLICT, DUPLICATE_RECORD). They are not a crash here; any
	// other is. Each must be a code the crash rule knows.
	ExpectedCodes []string `yaml:"expected_codes"`
}

// defectUnit is a package's unit tests that must fail when built with the defect's tag.
type defectUnit struct {
	Package string   `yaml:"package"`
	Tests   []string `yaml:"tests"`
}

var defectNamePattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// tag is the build tag that plants the defect.
func (d Defect) tag() string { return "defect_" + strings.ReplaceAll(d.Name, "-", "_") }

func (d Defect) scenarios() []string {
	var ids []string
	for _, c := range d.Catches {
		ids = append(ids, c.Scenario)
	}
	return ids
}

// LoadCatalogue reads and validates the catalogue. known, when non-nil, is the set of
// scenario ids of the manifest.
func LoadCatalogue(path string, known map[string]bool) (*defectCatalogue, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the defect catalogue: %w", err)
	}
	var cat defectCatalogue
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cat); err != nil {
		return nil, fmt.Errorf("defect catalogue %s: %w", path, err)
	}
	if len(cat.Defects) == 0 {
		return nil, fmt.Errorf("defect catalogue %s: no defects", path)
	}
	seen := map[string]bool{}
	for i, d := range cat.Defects {
		where := fmt.Sprintf("defect catalogue %s: defect %d (%s)", path, i+1, d.Name)
		switch {
		case !defectNamePattern.MatchString(d.Name):
			return nil, fmt.Errorf("%s: name must be lower-case words joined by '-'", where)
		case seen[d.Name]:
			return nil, fmt.Errorf("%s: duplicate name", where)
		case d.Description == "":
			return nil, fmt.Errorf("%s: no description", where)
		case len(d.Catches) == 0 && len(d.Awaiting) == 0 && len(d.UnitTests) == 0 && d.Explore == nil:
			// A defect below what any scenario can reach (a race window of the emulator)
			// is proven by its unit tests alone.
			return nil, fmt.Errorf("%s: names neither the scenarios that catch it, nor those it awaits, nor unit tests, nor an exploration", where)
		}
		if d.Explore != nil {
			if err := d.Explore.check(known); err != nil {
				return nil, fmt.Errorf("%s: explore: %w", where, err)
			}
			if d.Fast && len(d.Catches) == 0 {
				// --fast leaves explorations out (tens of schedules): such a defect would
				// have nothing left to prove it in CI.
				return nil, fmt.Errorf("%s: fast, but its only proof is an exploration, which --fast does not run", where)
			}
		}
		seen[d.Name] = true
		scen := map[string]bool{}
		for _, c := range d.Catches {
			switch {
			case c.Scenario == "" || c.Assertion == "":
				return nil, fmt.Errorf("%s: every catch needs a scenario and the failing assertion", where)
			case scen[c.Scenario]:
				return nil, fmt.Errorf("%s: scenario %s listed twice", where, c.Scenario)
			case known != nil && !known[c.Scenario]:
				return nil, fmt.Errorf("%s: scenario %s is not in the manifest", where, c.Scenario)
			}
			for _, code := range c.ExpectedCodes {
				if !crashCodes[code] && !kintoneErrorCode.MatchString(code) {
					return nil, fmt.Errorf("%s: scenario %s: expected code %q is not one the crash rule takes for a crash (a FlowNet repository or fallback code, or a kintone CB_/GAIA_ code): nothing to exempt", where, c.Scenario, code)
				}
			}
			scen[c.Scenario] = true
		}
		for _, a := range d.Awaiting {
			if known != nil && !known[a] {
				return nil, fmt.Errorf("%s: awaited scenario %s is not in the manifest", where, a)
			}
		}
		for _, u := range d.UnitTests {
			if u.Package == "" || len(u.Tests) == 0 {
				return nil, fmt.Errorf("%s: unit_tests need a package and test names", where)
			}
		}
	}
	return &cat, nil
}

// Select applies --only (names, either form: resume-prints-new or
// defect_resume_prints_new) and --fast.
func Select(all []Defect, only []string, fast bool) ([]Defect, error) {
	want := map[string]bool{}
	for _, o := range only {
		for _, n := range strings.Split(o, ",") {
			n = strings.TrimSpace(n)
			n = strings.ReplaceAll(strings.TrimPrefix(n, "defect_"), "_", "-")
			if n != "" {
				want[n] = true
			}
		}
	}
	var out []Defect
	found := map[string]bool{}
	for _, d := range all {
		if len(want) > 0 && !want[d.Name] {
			continue
		}
		found[d.Name] = true
		if fast && !d.Fast {
			continue
		}
		if fast && d.Explore != nil {
			// CI proves a fast defect by its catches; its exploration (tens of
			// schedules) runs in the full catalogue, and the table says it was not run.
			d.exploreNotRun, d.Explore = d.Explore, nil
		}
		out = append(out, d)
	}
	var names []string
	for n := range want {
		if !found[n] {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		sort.Strings(names)
		return nil, refusal.New("--only: no defect named %s in the catalogue", strings.Join(names, ", "))
	}
	if len(out) == 0 {
		return nil, refusal.New("no defect selected")
	}
	return out, nil
}
