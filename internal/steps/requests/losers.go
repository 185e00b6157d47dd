package requests

import (
	"context"
	"fmt"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// loserDomain: one Node State two FlowNet processes write at once — its revisions noted
// before the race, and afterwards exactly one write on top of them (the winner's; a loser's
// write that also landed would show a second one).
type loserDomain struct{}

func (d loserDomain) register(reg stepdef.Registry) {
	reg.Step(`^the Node State of node "([^"]+)" is noted$`, d.nodeStateNoted)
	reg.Step(`^the Node State of node "([^"]+)" took exactly one write since it was noted, and is "([A-Z]+)"$`, d.oneWriteSinceNoted)
}

// loserState: the Node States noted before a race, by fixture node name.
type loserState struct {
	noted map[string]kit.NodeState
}

var loserKey = scenario.NewKey[loserState]("losers")

// nodeStateOf reads the run's Node State of a fixture node.
func nodeStateOf(ctx context.Context, node string) (kit.NodeState, error) {
	nd, err := kit.FixturesOf(ctx).Node(node)
	if err != nil {
		return kit.NodeState{}, err
	}
	states, err := kit.NodeStates(ctx)
	if err != nil {
		return kit.NodeState{}, err
	}
	ns, ok := states[nd.ID]
	if !ok {
		return kit.NodeState{}, fmt.Errorf("the run has no Node State for %s", nd.ID)
	}
	return ns, nil
}

func (loserDomain) nodeStateNoted(ctx context.Context, node string) error {
	ls := loserKey.Of(scenario.From(ctx))
	ns, err := nodeStateOf(ctx, node)
	if err != nil {
		return err
	}
	if ls.noted == nil {
		ls.noted = map[string]kit.NodeState{}
	}
	ls.noted[node] = ns
	kit.SceneOf(ctx).St.Note("Node State of "+node, fmt.Sprintf("%s at $revision %s, revision %s", ns.Status, ns.Revision, ns.BusinessRevision))
	return nil
}

// oneWriteSinceNoted: kintone's $revision and the record's own revision field each moved by
// exactly one since the note (two landed writes would move both by two), and the status is
// the one the winner wrote.
func (loserDomain) oneWriteSinceNoted(ctx context.Context, node, status string) error {
	sc := kit.SceneOf(ctx)
	before, ok := loserKey.Of(sc.St).noted[node]
	if !ok {
		return fmt.Errorf("the Node State of %s was not noted (missing: the Node State of node %q is noted)", node, node)
	}
	now, err := nodeStateOf(ctx, node)
	if err != nil {
		return err
	}
	want := fmt.Sprintf("%s | $revision %d | revision %d", status, kit.Atoi(before.Revision)+1, kit.Atoi(before.BusinessRevision)+1)
	seen := fmt.Sprintf("%s | $revision %s | revision %s", now.Status, now.Revision, now.BusinessRevision)
	return sc.St.On("state.NODE_STATE.status", "state.NODE_STATE.revision").Equal("Node State of "+node+" after the race: status | $revision | revision (one write since noted)", want, seen)
}
