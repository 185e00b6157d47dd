package kit

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// FixtureDomain: the network fixture a scenario runs and the scope it is rendered with.
type FixtureDomain struct{}

func (d FixtureDomain) register(reg stepdef.Registry) {
	reg.Step(exprNetworkFixture, d.theNetworkFixture)
	reg.Step(exprNetworkFixtureWithSwap, d.theNetworkFixtureWithSwap)
	reg.Step(exprNetworkFixtureInSubScope, d.theNetworkFixtureInASubScope)
	reg.Step(`^the working copy of the SQL of node "([^"]+)" has "([^"]+)" replaced by "([^"]+)"$`, d.EditTheWorkingCopy)
	reg.Step(exprNetworkFixtureAs, d.theNetworkFixtureAs)
	reg.Step(`^the scenario turns to network "([^"]+)"$`, d.turnsToNetwork)
}

// FixtureState is the scope the scenario uses now and the network rendered under it. A
// scenario that drives several networks names each ("as network "local""): the latest one
// rendered is the current network the other steps act on, and steps that name a network
// find it by its label.
type FixtureState struct {
	cur      *scope.Scope // the scope the scenario uses now (its own, or a trial sub-scope)
	network  *scope.Rendered
	name     string                     // fixture file inside features/fixtures/networks, for re-rendering under a trial scope
	swap     map[string]string          // fixture node -> SQL swapped in
	labelled map[string]*scope.Rendered // networks rendered "as network <label>"
}

var FixtureKey = scenario.NewKey[FixtureState]("fixtures")

func FixturesOf(ctx context.Context) *FixtureState { return FixtureKey.Of(scenario.From(ctx)) }

// Begin hands the fixture domain the scenario's own scope (BeforeScenario).
func (f *FixtureState) Begin(sc *scope.Scope) { f.cur = sc }

// Scope is the scope the scenario uses now: its own, or the trial sub-scope it entered.
func (f *FixtureState) Scope() *scope.Scope { return f.cur }

// Current is the current network, nil before the scenario rendered one.
func (f *FixtureState) Current() *scope.Rendered { return f.network }

// FileName is the file name of the current network's fixture.
func (f *FixtureState) FileName() string { return f.name }

func (FixtureDomain) theNetworkFixture(ctx context.Context, name string) error {
	return FixturesOf(ctx).render(SceneOf(ctx), name, nil)
}

func (FixtureDomain) theNetworkFixtureWithSwap(ctx context.Context, name, node, sql string) error {
	return FixturesOf(ctx).render(SceneOf(ctx), name, map[string]string{node: sql})
}

// theNetworkFixtureAs renders a fixture as one more network of the scenario: its network id
// is the fixture's with "_<label>" appended (so one fixture can be two networks with two
// locks), checked like every identifier made after the preflight. It becomes the current
// network.
func (FixtureDomain) theNetworkFixtureAs(ctx context.Context, name, label string) error {
	sc, f := SceneOf(ctx), FixturesOf(ctx)
	if _, dup := f.labelled[label]; dup {
		return fmt.Errorf("a network labelled %q was already rendered in this scenario", label)
	}
	if err := plainLabel(label); err != nil {
		return err
	}
	src, err := sc.Suite.FixtureFile(scope.FixtureNetworks, name)
	if err != nil {
		return err
	}
	r, err := f.cur.Render(src.Path, filepath.Join(sc.St.WorkDir, "network-"+f.cur.Hash8()+"-"+label), scope.RenderOptions{NetworkIDSuffix: "_" + label, SQLFolder: sc.Suite.sqlFolder()})
	if err != nil {
		return fmt.Errorf("render fixture %s as network %q: %w", name, label, err)
	}
	f.network, f.name, f.swap = &r, src.Name, nil
	if f.labelled == nil {
		f.labelled = map[string]*scope.Rendered{}
	}
	f.labelled[label] = &r
	return f.checkIdentifiers(sc)
}

// turnsToNetwork makes a labelled network the current one again: the steps that act on
// "the network" and "the run" act on it (a scenario that works on several in turn).
func (FixtureDomain) turnsToNetwork(ctx context.Context, label string) error {
	f := FixturesOf(ctx)
	n, err := f.NetworkOf(`network "` + label + `"`)
	if err != nil {
		return err
	}
	f.network, f.swap = n, nil
	return nil
}

// NetRef is how feature text names a network: the current one ("the run", whose network
// it is) or a labelled one (`network "local"`).
const NetRef = `(the run|network "[^"]+")`

// Principal is a named operator identity of the scope (KSQL_FLOW_TEST_<hash8>_<name>: an
// approver, the operator who confirms a stop), checked like every identifier made after the
// preflight, since it is written to kintone.
func (f *FixtureState) Principal(sc *Scene, name string) (string, error) {
	p := f.cur.Principal(name)
	if sc.Suite.CheckIdentifiers == nil {
		return "", fmt.Errorf("no identifier check was wired: principal %s cannot be made after preflight", p)
	}
	return p, sc.Suite.CheckIdentifiers([]safety.Identifier{{Scenario: sc.St.ID, Kind: safety.IdentOther, Value: p}})
}

// Networks are the networks the scenario rendered under its scope, the current one first,
// each once.
func (f *FixtureState) Networks() []*scope.Rendered {
	var out []*scope.Rendered
	seen := map[string]bool{}
	add := func(n *scope.Rendered) {
		if n != nil && !seen[n.NetworkID] {
			seen[n.NetworkID] = true
			out = append(out, n)
		}
	}
	add(f.network)
	for _, l := range slices.Sorted(maps.Keys(f.labelled)) {
		add(f.labelled[l])
	}
	return out
}

// NetworkOf resolves a netRef.
func (f *FixtureState) NetworkOf(ref string) (*scope.Rendered, error) {
	if ref == "the run" {
		return f.Rendered()
	}
	label := strings.TrimSuffix(strings.TrimPrefix(ref, `network "`), `"`)
	n, ok := f.labelled[label]
	if !ok {
		return nil, fmt.Errorf("no network was rendered as %q (missing Given the network fixture … as network %q)", label, label)
	}
	return n, nil
}

// theNetworkFixtureInASubScope starts a new part of the scenario: a fresh sub-scope (its own
// business key, network and job ids, checked like the preflight's) with the fixture
// rendered under it; the processes of the earlier part leave play.
func (FixtureDomain) theNetworkFixtureInASubScope(ctx context.Context, name, label string) error {
	sc := SceneOf(ctx)
	f := FixturesOf(ctx)
	if err := f.EnterSubScope(sc, label); err != nil {
		return err
	}
	if err := f.render(sc, name, nil); err != nil {
		return err
	}
	return f.checkIdentifiers(sc)
}

// EditTheWorkingCopy changes the rendered SQL of a node the way an operator would edit the
// file between two runs. The edit must occur exactly once, and the edited file must pass the
// preflight's fixture rules (a feature cannot smuggle a write statement past the allow-list).
func (FixtureDomain) EditTheWorkingCopy(ctx context.Context, name, old, replacement string) error {
	sc := SceneOf(ctx)
	node, err := FixturesOf(ctx).Node(name)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(node.SQL)
	if err != nil {
		return fmt.Errorf("working copy of %s: %w", name, err)
	}
	if err := sc.St.On("harness.fixture").Equal(fmt.Sprintf("occurrences of %q in the working copy of %s", old, name), 1, strings.Count(string(data), old)); err != nil {
		return err
	}
	edited := strings.Replace(string(data), old, replacement, 1)
	if sc.Suite.CheckFixture == nil {
		return fmt.Errorf("no fixture check was wired: a working copy cannot be edited after preflight")
	}
	if err := sc.Suite.CheckFixture(safety.Fixture{Scenario: sc.St.ID, Kind: safety.FixtureSQL, Path: node.SQL, Content: []byte(edited)}); err != nil {
		return fmt.Errorf("edited working copy of %s: %w", name, err)
	}
	info, err := os.Stat(node.SQL)
	if err != nil {
		return err
	}
	if err := os.WriteFile(node.SQL, []byte(edited), info.Mode().Perm()); err != nil {
		return fmt.Errorf("write the working copy of %s: %w", name, err)
	}
	sc.St.Note("working copy of "+name+" edited", fmt.Sprintf("%q -> %q in %s", old, replacement, filepath.Base(node.SQL)))
	return nil
}

// render writes the fixture (and its SQL) into the scenario work dir with the scope's
// identifiers.
func (f *FixtureState) render(sc *Scene, name string, swap map[string]string) error {
	src, err := sc.Suite.FixtureFile(scope.FixtureNetworks, name)
	if err != nil {
		return err
	}
	opts := scope.RenderOptions{SQLFolder: sc.Suite.sqlFolder()}
	if len(swap) > 0 {
		opts.SwapSQL = map[string]string{}
		for node, sql := range swap {
			file, err := sc.Suite.FixtureFile(scope.FixtureJobs, sql)
			if err != nil {
				return err
			}
			opts.SwapSQL[node] = file.Path
		}
	}
	dst := filepath.Join(sc.St.WorkDir, "network-"+f.cur.Hash8()+"-"+strings.TrimSuffix(src.Name, ".yaml"))
	r, err := f.cur.Render(src.Path, dst, opts)
	if err != nil {
		return fmt.Errorf("render fixture %s: %w", name, err)
	}
	f.network, f.name, f.swap = &r, src.Name, swap
	return nil
}

// Rendered returns the rendered network or says which step is missing.
func (f *FixtureState) Rendered() (*scope.Rendered, error) {
	if f.network == nil {
		return nil, fmt.Errorf("no network fixture was rendered (missing Given the network fixture …)")
	}
	return f.network, nil
}

// Node maps a fixture node id (as the feature text names it) to the rendered node.
func (f *FixtureState) Node(fixtureNode string) (scope.RenderedNode, error) {
	n, err := f.Rendered()
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

// FixtureName maps a rendered node id back to the fixture's name, for messages.
func (f *FixtureState) FixtureName(id string) string {
	if f.network != nil {
		for _, n := range f.network.Nodes {
			if n.ID == id {
				return n.FixtureID
			}
		}
	}
	return id
}

func (f *FixtureState) fixtureNames(ids []string) string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, f.FixtureName(id))
	}
	return strings.Join(out, ",")
}

// SwitchToTrialScope moves the scenario to a fresh sub-scope for a retried ordering trial (the
// previous trial's run still holds its business key and network) and re-renders the fixture
// under it, checked like the preflight's.
func (f *FixtureState) SwitchToTrialScope(ctx context.Context, sc *Scene, trial int) error {
	if err := f.EnterSubScope(sc, fmt.Sprintf("trial%d", trial)); err != nil {
		return err
	}
	if err := f.render(sc, f.name, f.swap); err != nil {
		return err
	}
	if err := f.checkIdentifiers(sc); err != nil {
		return fmt.Errorf("trial %d scope %s: %w", trial, f.cur.ID(), err)
	}
	return nil
}

// EnterSubScope replaces the scope by a fresh one labelled after the scenario; the processes
// started so far leave play, and the old scope's records are cleaned up with the scenario.
func (f *FixtureState) EnterSubScope(sc *Scene, label string) error {
	next, err := scope.New(sc.St.ID+"_"+label, time.Now(), nil)
	if err != nil {
		return fmt.Errorf("sub-scope %s: %w", label, err)
	}
	old := f.cur
	f.cur, f.network = next, nil
	procs := processKey.Of(sc.St)
	runIDs := procs.runIDs(old)
	procs.retire()
	if sc.Suite.Cleaner != nil {
		sc.St.Defer("delete the records of "+old.ID(), func(ctx context.Context) error {
			_, err := sc.Suite.Cleaner.DeleteScope(ctx, old, runIDs)
			return err
		})
	}
	return nil
}

// checkIdentifiers runs the preflight's identifier rules on the current scope and its
// rendered network.
func (f *FixtureState) checkIdentifiers(sc *Scene) error {
	if sc.Suite.CheckIdentifiers == nil {
		return fmt.Errorf("no identifier check was wired: a sub-scope cannot be made after preflight")
	}
	id := sc.St.ID
	ids := []safety.Identifier{
		{Scenario: id, Kind: safety.IdentScope, Value: f.cur.ID()},
		{Scenario: id, Kind: safety.IdentOther, Value: f.cur.BusinessKey()},
		{Scenario: id, Kind: safety.IdentRequester, Value: f.cur.Principal("requester")},
		{Scenario: id, Kind: safety.IdentServicePrincipal, Value: f.cur.Principal("service")},
		{Scenario: id, Kind: safety.IdentPollerHost, Value: f.cur.Host()},
	}
	if f.network != nil {
		ids = append(ids, safety.Identifier{Scenario: id, Kind: safety.IdentNetworkID, Value: f.network.NetworkID})
		for _, n := range f.network.Nodes {
			ids = append(ids,
				safety.Identifier{Scenario: id, Kind: safety.IdentNodeID, Value: n.ID},
				safety.Identifier{Scenario: id, Kind: safety.IdentJobID, Value: n.JobID})
		}
	}
	return sc.Suite.CheckIdentifiers(ids)
}

// RenderReplacing renders a fixture with placeholder tokens replaced in its SQL (the CSV
// series: row prefix, marker key, encoding), as the current network, or as a labelled one
// when label is set; the rendered SQL passes the preflight's fixture rules again, and the
// identifiers made are checked like the preflight's.
func (f *FixtureState) RenderReplacing(sc *Scene, name, label string, replace map[string]string) error {
	src, err := sc.Suite.FixtureFile(scope.FixtureNetworks, name)
	if err != nil {
		return err
	}
	opts := scope.RenderOptions{SQLReplace: replace, SQLFolder: sc.Suite.sqlFolder()}
	dst := filepath.Join(sc.St.WorkDir, "network-"+f.cur.Hash8()+"-"+strings.TrimSuffix(src.Name, ".yaml"))
	if label != "" {
		if _, dup := f.labelled[label]; dup {
			return fmt.Errorf("a network labelled %q was already rendered in this scenario", label)
		}
		if err := plainLabel(label); err != nil {
			return err
		}
		opts.NetworkIDSuffix = "_" + label
		dst = filepath.Join(sc.St.WorkDir, "network-"+f.cur.Hash8()+"-"+label)
	}
	r, err := f.cur.Render(src.Path, dst, opts)
	if err != nil {
		return fmt.Errorf("render fixture %s: %w", name, err)
	}
	if sc.Suite.CheckFixture == nil {
		return fmt.Errorf("no fixture check was wired: a fixture cannot be rendered with replacements after preflight")
	}
	for _, n := range r.Nodes {
		data, err := os.ReadFile(n.SQL)
		if err != nil {
			return err
		}
		if err := sc.Suite.CheckFixture(safety.Fixture{Scenario: sc.St.ID, Kind: safety.FixtureSQL, Path: n.SQL, Content: data}); err != nil {
			return fmt.Errorf("rendered SQL of %s: %w", n.FixtureID, err)
		}
	}
	f.network, f.name, f.swap = &r, src.Name, nil
	if label != "" {
		if f.labelled == nil {
			f.labelled = map[string]*scope.Rendered{}
		}
		f.labelled[label] = &r
	}
	return f.checkIdentifiers(sc)
}

// Expand fills {scope} and {network_id} (of network n) into a feature-text value.
func Expand(ctx context.Context, v, networkID string) string {
	return strings.NewReplacer("{scope}", FixturesOf(ctx).Scope().ID(), "{network_id}", networkID).Replace(v)
}
