package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
	"github.com/ksqlflow/flowtest/internal/steps"
)

// preparation is what preflight makes for the selected scenarios: their scopes, every
// identifier they will use and their rendered fixtures.
type preparation struct {
	scopes   map[string]*scope.Scope
	idents   []safety.Identifier
	fixtures []safety.Fixture
	selected []string
}

// scopeIDs are the prepared scopes, sorted.
func (p *preparation) scopeIDs() []string {
	out := make([]string, 0, len(p.scopes))
	for _, sc := range p.scopes {
		out = append(out, sc.ID())
	}
	sort.Strings(out)
	return out
}

// prepare makes each selected scenario's scope and renders the fixtures its steps name, so
// that the safety checks see exactly what the scenarios will use. Which identifiers beyond the
// base ones a scenario will use follows its declared needs (the manifest). Nothing is started.
// confirmer is the named confirmer ("" when the scope's principal confirms).
func prepare(items []runner.Item, fixturesDir, profile, dir, confirmer string) (*preparation, error) {
	p := &preparation{scopes: map[string]*scope.Scope{}, selected: []string{}}
	for _, it := range items {
		if !it.Run {
			continue
		}
		p.selected = append(p.selected, it.ID)
		sc, err := scope.New(it.ID, time.Now(), nil)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: scope: %w", it.ID, err)
		}
		p.scopes[it.ID] = sc
		add := func(kind safety.IdentKind, v string) {
			p.idents = append(p.idents, safety.Identifier{Scenario: it.ID, Kind: kind, Value: v})
		}
		add(safety.IdentScope, sc.ID())
		add(safety.IdentOther, sc.BusinessKey())
		add(safety.IdentRequester, sc.Principal("requester"))
		add(safety.IdentServicePrincipal, sc.Principal("service"))
		if it.Needs.Has(runner.NeedRequestApp) { // only request scenarios run pollers
			add(safety.IdentPollerHost, sc.Host())
		}
		if it.Needs.Has(runner.NeedConfirmer) && confirmer == "" { // the scope's principal confirms
			add(safety.IdentOther, sc.Principal("confirmer"))
		}
		for i, ref := range steps.FixturesOf(it.Feature.StepText) {
			// The step's own resolver: the preflight checks the file the step will read, and a
			// path that leaves its folder is refused here, before anything starts.
			file, err := scope.ResolveFixture(fixturesDir, ref.Kind, ref.Name)
			if err != nil {
				return nil, fmt.Errorf("scenario %s (%s): %s: %w", it.ID, stepWhere(it.Feature, ref.At), ref.Step, err)
			}
			if ref.Kind == scope.FixtureJobs {
				data, err := os.ReadFile(file.Path)
				if err != nil {
					return nil, fmt.Errorf("scenario %s: fixture SQL %s: %w", it.ID, file.Name, err)
				}
				p.fixtures = append(p.fixtures, safety.Fixture{Scenario: it.ID, Kind: safety.FixtureSQL, Path: file.Path, Content: data})
				continue
			}
			dst := filepath.Join(dir, it.ID, fmt.Sprintf("%d-%s", i, strings.TrimSuffix(filepath.Base(file.Path), ".yaml")))
			r, err := sc.Render(file.Path, dst, scope.RenderOptions{SQLFolder: steps.SQLFolder(fixturesDir)})
			if err != nil {
				return nil, fmt.Errorf("scenario %s (%s): %s: %w", it.ID, stepWhere(it.Feature, ref.At), ref.Step, err)
			}
			add(safety.IdentNetworkID, r.NetworkID)
			for _, node := range r.Nodes {
				add(safety.IdentNodeID, node.ID)
				add(safety.IdentJobID, node.JobID)
			}
			for _, rendered := range r.Files {
				data, err := os.ReadFile(rendered)
				if err != nil {
					return nil, fmt.Errorf("scenario %s: read rendered %s: %w", it.ID, rendered, err)
				}
				fx := safety.Fixture{Scenario: it.ID, Path: rendered, Content: data}
				switch {
				case rendered == r.Path:
					// The allow-list holds the resolved file's name in its folder, not the
					// step's argument: a link inside the folder counts as its target.
					fx.Kind, fx.Name = safety.FixtureNetwork, file.Name
					for _, node := range r.Nodes {
						fx.JobIDs = append(fx.JobIDs, node.FixtureJobID)
					}
				case strings.HasSuffix(rendered, ".sql"):
					fx.Kind = safety.FixtureSQL
				default:
					continue
				}
				p.fixtures = append(p.fixtures, fx)
			}
		}
		for _, id := range sc.Identifiers() {
			if !hasIdent(p.idents, it.ID, id) {
				add(safety.IdentOther, id)
			}
		}
	}
	return p, nil
}

// stepWhere is file:line of a scenario's step i (the scenario's line when unknown).
func stepWhere(f *runner.Feature, i int) string {
	line := f.Line
	if i < len(f.StepLines) && f.StepLines[i] > 0 {
		line = f.StepLines[i]
	}
	return fmt.Sprintf("%s:%d", f.Path, line)
}

func hasIdent(list []safety.Identifier, scenario, v string) bool {
	for _, i := range list {
		if i.Scenario == scenario && i.Value == v {
			return true
		}
	}
	return false
}

// safetyNeeds hands the selected scenarios' declared needs to the safety layer (which imports
// nothing of ours, so it gets booleans, not need names).
func safetyNeeds(items []runner.Item) map[string]safety.Needs {
	out := map[string]safety.Needs{}
	for _, it := range items {
		if it.Run {
			out[it.ID] = safety.Needs{RequestApp: it.Needs.Has(runner.NeedRequestApp), CSV: it.Needs.Has(runner.NeedCSVIO)}
		}
	}
	return out
}
