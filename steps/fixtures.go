package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/scope"
	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/safety"
)

// fixtureDomain: the network fixture a scenario runs and the scope it is rendered with.
type fixtureDomain struct{}

func (d fixtureDomain) register(reg stepdef.Registry) {
	reg.Step(`^the network fixture "([^"]+)"$`, d.theNetworkFixture)
	reg.Step(`^the network fixture "([^"]+)" with node "([^"]+)" running "([^"]+)"$`, d.theNetworkFixtureWithSwap)
}

// fixtureState is the scope the scenario uses now and the network rendered under it.
type fixtureState struct {
	scope   *scope.Scope
	network *scope.Rendered
	name    string            // fixture file name, for re-rendering under a trial scope
	swap    map[string]string // fixture node -> SQL swapped in
}

var fixtureKey = scenario.NewKey[fixtureState]("fixtures")

func fixturesOf(ctx context.Context) *fixtureState { return fixtureKey.Of(scenario.From(ctx)) }

func (fixtureDomain) theNetworkFixture(ctx context.Context, name string) error {
	return fixturesOf(ctx).render(sceneOf(ctx), name, nil)
}

func (fixtureDomain) theNetworkFixtureWithSwap(ctx context.Context, name, node, sql string) error {
	return fixturesOf(ctx).render(sceneOf(ctx), name, map[string]string{node: sql})
}

// render writes the fixture (and its SQL) into the scenario work dir with the scope's
// identifiers.
func (f *fixtureState) render(sc *scene, name string, swap map[string]string) error {
	src := filepath.Join(sc.suite.FixturesDir, "networks", name)
	opts := scope.RenderOptions{}
	if len(swap) > 0 {
		opts.SwapSQL = map[string]string{}
		for node, sql := range swap {
			opts.SwapSQL[node] = filepath.Join(sc.suite.FixturesDir, "jobs", sql)
		}
	}
	dst := filepath.Join(sc.st.WorkDir, "network-"+f.scope.Hash8())
	r, err := f.scope.Render(src, dst, opts)
	if err != nil {
		return fmt.Errorf("render fixture %s: %w", name, err)
	}
	f.network, f.name, f.swap = &r, name, swap
	return nil
}

// rendered returns the rendered network or says which step is missing.
func (f *fixtureState) rendered() (*scope.Rendered, error) {
	if f.network == nil {
		return nil, fmt.Errorf("no network fixture was rendered (missing Given the network fixture …)")
	}
	return f.network, nil
}

// node maps a fixture node id (as the feature text names it) to the rendered node.
func (f *fixtureState) node(fixtureNode string) (scope.RenderedNode, error) {
	n, err := f.rendered()
	if err != nil {
		return scope.RenderedNode{}, err
	}
	for _, node := range n.Nodes {
		if node.FixtureID == fixtureNode {
			return node, nil
		}
	}
	return scope.RenderedNode{}, fmt.Errorf("network %s has no node %q", n.FixtureNetworkID, fixtureNode)
}

// fixtureName maps a rendered node id back to the fixture's name, for messages.
func (f *fixtureState) fixtureName(id string) string {
	if f.network != nil {
		for _, n := range f.network.Nodes {
			if n.ID == id {
				return n.FixtureID
			}
		}
	}
	return id
}

func (f *fixtureState) fixtureNames(ids []string) string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, f.fixtureName(id))
	}
	return strings.Join(out, ",")
}

// switchToTrialScope moves the scenario to a fresh sub-scope (a retried ordering trial: the
// previous trial's run still holds its business key and network) after the sub-scope's
// identifiers passed the same checks as the preflight's. The old scope's records are
// cleaned up with the scenario.
func (f *fixtureState) switchToTrialScope(ctx context.Context, sc *scene, trial int) error {
	next, err := scope.New(fmt.Sprintf("%s_trial%d", sc.st.ID, trial), time.Now(), nil)
	if err != nil {
		return fmt.Errorf("trial %d scope: %w", trial, err)
	}
	old := f.scope
	f.scope = next
	if err := f.render(sc, f.name, f.swap); err != nil {
		return err
	}
	if err := f.checkIdentifiers(sc); err != nil {
		return fmt.Errorf("trial %d scope %s: %w", trial, next.ID(), err)
	}
	procs := processKey.Of(sc.st)
	runIDs := procs.runIDs(old)
	procs.retire()
	if sc.suite.Cleaner != nil {
		sc.st.Defer("delete the records of "+old.ID(), func(ctx context.Context) error {
			_, err := sc.suite.Cleaner.DeleteScope(ctx, old, runIDs)
			return err
		})
	}
	return nil
}

// checkIdentifiers runs the preflight's identifier rules on the current scope and its
// rendered network.
func (f *fixtureState) checkIdentifiers(sc *scene) error {
	if sc.suite.CheckIdentifiers == nil {
		return fmt.Errorf("no identifier check was wired: a sub-scope cannot be made after preflight")
	}
	id := sc.st.ID
	ids := []safety.Identifier{
		{Scenario: id, Kind: safety.IdentScope, Value: f.scope.ID()},
		{Scenario: id, Kind: safety.IdentOther, Value: f.scope.BusinessKey()},
		{Scenario: id, Kind: safety.IdentRequester, Value: f.scope.Principal("requester")},
		{Scenario: id, Kind: safety.IdentServicePrincipal, Value: f.scope.Principal("service")},
		{Scenario: id, Kind: safety.IdentPollerHost, Value: f.scope.Host()},
	}
	if f.network != nil {
		ids = append(ids, safety.Identifier{Scenario: id, Kind: safety.IdentNetworkID, Value: f.network.NetworkID})
		for _, n := range f.network.Nodes {
			ids = append(ids,
				safety.Identifier{Scenario: id, Kind: safety.IdentNodeID, Value: n.ID},
				safety.Identifier{Scenario: id, Kind: safety.IdentJobID, Value: n.JobID})
		}
	}
	return sc.suite.CheckIdentifiers(ids)
}
