package cli

// Preflight rules driven by the manifest's `needs`: the declaration decides, never the
// scenario id or series.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

func item(id string, run bool, needs ...runner.Need) runner.Item {
	return runner.Item{Entry: runner.Entry{ID: id, Series: "s", Needs: needs}, Run: run, Feature: &runner.Feature{ID: id}}
}

func TestSafetyNeedsCarryTheDeclaration(t *testing.T) {
	got := safetyNeeds([]runner.Item{
		item("a", true),
		item("b", true, runner.NeedRequestApp),
		item("c", true, runner.NeedRequestApp, runner.NeedCSVIO, runner.NeedFaultProxy),
		item("d", false, runner.NeedRequestApp),
	})
	assert.Equal(t, map[string]safety.Needs{"a": {}, "b": {RequestApp: true}, "c": {RequestApp: true, CSV: true}}, got)
}

// The identifiers preflight checks follow the needs: a poller host only where pollers run, the
// scope's confirmer principal only where the sandbox confirms a force-unlock.
func TestPrepareIdentifiersFollowNeeds(t *testing.T) {
	items := []runner.Item{item("base", true), item("req", true, runner.NeedRequestApp), item("kill", true, runner.NeedConfirmer)}
	kinds := func(p *preparation, id string) map[safety.IdentKind][]string {
		out := map[safety.IdentKind][]string{}
		for _, i := range p.idents {
			if i.Scenario == id {
				out[i.Kind] = append(out[i.Kind], i.Value)
			}
		}
		return out
	}
	p, err := prepare(items, t.TempDir(), "e2e", t.TempDir(), "")
	require.NoError(t, err)
	assert.Equal(t, []string{"base", "req", "kill"}, p.selected)
	assert.Empty(t, kinds(p, "base")[safety.IdentPollerHost])
	assert.Len(t, kinds(p, "req")[safety.IdentPollerHost], 1)
	assert.Empty(t, kinds(p, "kill")[safety.IdentPollerHost])
	confirmer := p.scopes["kill"].Principal("confirmer")
	assert.Contains(t, kinds(p, "kill")[safety.IdentOther], confirmer)
	assert.NotContains(t, kinds(p, "base")[safety.IdentOther], p.scopes["base"].Principal("confirmer"))

	p, err = prepare(items, t.TempDir(), "e2e", t.TempDir(), "alice")
	require.NoError(t, err)
	assert.NotContains(t, kinds(p, "kill")[safety.IdentOther], p.scopes["kill"].Principal("confirmer"), "a named confirmer is not a generated identifier")
}
