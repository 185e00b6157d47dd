package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/harness/config"
	"github.com/ksqlflow/flowtest/harness/scope"
	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/safety"
	"github.com/ksqlflow/flowtest/steps"
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
		networks, sqls := steps.FixturesOf(it.Feature.StepText)
		for _, n := range networks {
			r, err := sc.Render(filepath.Join(fixturesDir, "networks", n), filepath.Join(dir, it.ID, strings.TrimSuffix(n, ".yaml")), scope.RenderOptions{})
			if err != nil {
				return nil, fmt.Errorf("scenario %s: fixture %s: %w", it.ID, n, err)
			}
			add(safety.IdentNetworkID, r.NetworkID)
			for _, node := range r.Nodes {
				add(safety.IdentNodeID, node.ID)
				add(safety.IdentJobID, node.JobID)
			}
			for _, file := range r.Files {
				data, err := os.ReadFile(file)
				if err != nil {
					return nil, fmt.Errorf("scenario %s: read rendered %s: %w", it.ID, file, err)
				}
				fx := safety.Fixture{Scenario: it.ID, Path: file, Content: data}
				switch {
				case file == r.Path:
					fx.Kind, fx.Name = safety.FixtureNetwork, n
					for _, node := range r.Nodes {
						fx.JobIDs = append(fx.JobIDs, node.FixtureJobID)
					}
				case strings.HasSuffix(file, ".sql"):
					fx.Kind = safety.FixtureSQL
				default:
					continue
				}
				p.fixtures = append(p.fixtures, fx)
			}
		}
		for _, s := range sqls {
			src := filepath.Join(fixturesDir, "jobs", s)
			data, err := os.ReadFile(src)
			if err != nil {
				return nil, fmt.Errorf("scenario %s: fixture SQL %s: %w", it.ID, s, err)
			}
			p.fixtures = append(p.fixtures, safety.Fixture{Scenario: it.ID, Kind: safety.FixtureSQL, Path: src, Content: data})
		}
		for _, id := range sc.Identifiers() {
			if !hasIdent(p.idents, it.ID, id) {
				add(safety.IdentOther, id)
			}
		}
	}
	return p, nil
}

func hasIdent(list []safety.Identifier, scenario, v string) bool {
	for _, i := range list {
		if i.Scenario == scenario && i.Value == v {
			return true
		}
	}
	return false
}

// needing lists, in run order, the selected scenarios whose manifest entry declares need.
func needing(items []runner.Item, need runner.Need) []string {
	var ids []string
	for _, it := range items {
		if it.Run && it.Needs.Has(need) {
			ids = append(ids, it.ID)
		}
	}
	return ids
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

// confirmerCheck is the preflight rule of the confirmer need: a selected scenario that kills a
// kSQL-Flow child and force-unlocks its job lock needs, in live mode, a named confirmer
// (--confirmed-by or M5_FORCE_UNLOCK_CONFIRMED_BY) before anything starts.
func confirmerCheck(target safety.Target, items []runner.Item, confirmer string) safety.Check {
	c := safety.Check{Name: "kill-confirmer", Subject: "--confirmed-by", OK: true, Reason: "no selected scenario needs a confirmer"}
	ids := needing(items, runner.NeedConfirmer)
	switch {
	case len(ids) == 0:
	case confirmer != "":
		c.Reason = "force-unlock cleanups confirmed by " + confirmer
	case target == safety.TargetLive:
		c.OK, c.Reason = false, "live scenarios needing a confirmer ("+strings.Join(ids, ", ")+") need a named confirmer: --confirmed-by or M5_FORCE_UNLOCK_CONFIRMED_BY"
	default:
		c.Reason = "sandbox: the scope's principal confirms"
	}
	return c
}

// ioDirCheck is the preflight rule of the csv-io need (scenarios.md §3.4): in live mode the
// per-scope CSV IO roots are made under KSQL_FLOWNET_IO_DIR, which must be an existing
// absolute directory. stat is os.Stat (injected for tests).
func ioDirCheck(target safety.Target, items []runner.Item, dir string, stat func(string) (os.FileInfo, error)) safety.Check {
	c := safety.Check{Name: "csv-io-dir", Subject: config.VarIODir, OK: true, Reason: "no selected scenario needs csv-io"}
	ids := needing(items, runner.NeedCSVIO)
	who := "csv-io scenarios (" + strings.Join(ids, ", ") + ")"
	switch {
	case len(ids) == 0:
	case target != safety.TargetLive:
		c.Reason = "sandbox: not checked (a live setting)"
	case strings.TrimSpace(dir) == "":
		c.OK, c.Reason = false, who+" need it: an existing absolute directory for the per-scope IO roots"
	case !filepath.IsAbs(dir):
		c.OK, c.Reason = false, fmt.Sprintf("%q is not an absolute path (%s need an existing absolute directory)", dir, who)
	default:
		st, err := stat(dir)
		switch {
		case err != nil:
			c.OK, c.Reason = false, fmt.Sprintf("%s need an existing directory: %v", who, err)
		case !st.IsDir():
			c.OK, c.Reason = false, fmt.Sprintf("%q is not a directory (%s need one)", dir, who)
		default:
			c.Reason = fmt.Sprintf("%s for %s", dir, who)
		}
	}
	return c
}
