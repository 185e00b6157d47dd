package kit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/scope"
)

func TestTheFlowNetRunNeedsExactlyOneInPlay(t *testing.T) {
	sc, err := scope.New("t", fixedTime, nil)
	require.NoError(t, err)
	var ps processState
	_, err = ps.Resolve("the FlowNet run")
	assert.ErrorContains(t, err, "no FlowNet process was started")

	first := &NamedProc{Name: "the first run", Kind: kindFlowNet, Scope: sc, Flownet: &FlownetCall{Name: "the first run"}}
	require.NoError(t, ps.add(first))
	got, err := ps.Resolve("the FlowNet run")
	require.NoError(t, err)
	assert.Same(t, first, got)

	second := &NamedProc{Name: "the resumed run", Kind: kindFlowNet, Scope: sc, Flownet: &FlownetCall{Name: "the resumed run"}}
	require.NoError(t, ps.add(second))
	_, err = ps.Resolve("the FlowNet run")
	assert.ErrorContains(t, err, "ambiguous")
	assert.ErrorContains(t, err, `"the resumed run"`)

	got, err = ps.Resolve(`"the resumed run"`)
	require.NoError(t, err)
	assert.Same(t, second, got)
	_, err = ps.Resolve(`"the third run"`)
	assert.ErrorContains(t, err, "no process named")

	// A trial's new scope retires what ran before: one FlowNet run is in play again.
	ps.retire()
	third := &NamedProc{Name: "flownet-trial-2", Kind: kindFlowNet, Scope: sc, Flownet: &FlownetCall{Name: "flownet-trial-2"}}
	require.NoError(t, ps.add(third))
	got, err = ps.Resolve("the FlowNet run")
	require.NoError(t, err)
	assert.Same(t, third, got)

	assert.ErrorContains(t, ps.add(&NamedProc{Name: "the first run", Kind: kindFlowNet}), "already started")
}

// The requester's background cancel takes its name in the process table, but a step that
// needs a process (its exit, its output, its proxy's end) refuses it instead of reaching for
// a process it does not have.
func TestARequesterIsNamedButIsNoProcess(t *testing.T) {
	var ps processState
	require.NoError(t, ps.add(&NamedProc{Name: "poller 1", Kind: kindFlowNet, Flownet: &FlownetCall{Name: "poller 1"}}))
	require.NoError(t, ps.add(&NamedProc{Name: "requester", Kind: kindRequester}))
	assert.True(t, ps.Started("requester"))
	assert.ErrorContains(t, ps.add(&NamedProc{Name: "requester", Kind: kindFlowNet}), "already started")
	_, err := ps.Resolve(`"requester"`)
	assert.ErrorContains(t, err, "not a process")
	_, err = ps.flownetRun(`"requester"`)
	assert.ErrorContains(t, err, "not a process")
	got, err := ps.Resolve("the FlowNet run")
	require.NoError(t, err, "the requester is no FlowNet process in play")
	assert.Equal(t, "poller 1", got.Name)
	assert.Len(t, ps.flownetCalls(), 1)
}

func TestTheHolderIsTheKsqlFlowWithThatRole(t *testing.T) {
	var ps processState
	require.NoError(t, ps.add(&NamedProc{Name: "flownet-run-network-1", Kind: kindFlowNet, Flownet: &FlownetCall{}}))
	require.NoError(t, ps.add(&NamedProc{Name: "holder-trial-1", Kind: KindKsqlFlow, Role: "holder"}))
	got, err := ps.Resolve("the holder")
	require.NoError(t, err)
	assert.Equal(t, "holder-trial-1", got.Name)
	_, err = ps.flownetRun("the holder")
	assert.ErrorContains(t, err, "not a FlowNet call")
}

func TestRunIDsAreThoseReportedInTheScope(t *testing.T) {
	a, _ := scope.New("a", fixedTime, nil)
	b, _ := scope.New("b", fixedTime, nil)
	var ps processState
	require.NoError(t, ps.add(&NamedProc{Name: "1", Kind: kindFlowNet, Scope: a, Flownet: &FlownetCall{runID: "r2"}}))
	require.NoError(t, ps.add(&NamedProc{Name: "2", Kind: kindFlowNet, Scope: a, Flownet: &FlownetCall{runID: "r1"}}))
	require.NoError(t, ps.add(&NamedProc{Name: "3", Kind: kindFlowNet, Scope: a, Flownet: &FlownetCall{runID: "r1"}}))
	require.NoError(t, ps.add(&NamedProc{Name: "4", Kind: kindFlowNet, Scope: b, Flownet: &FlownetCall{runID: "r9"}}))
	assert.Equal(t, []string{"r1", "r2"}, ps.runIDs(a))
	assert.Equal(t, []string{"r9"}, ps.runIDs(b))
}

func TestParseRunOutput(t *testing.T) {
	_, outcome, id := parseRunOutput("RESUME: Run netrun_1 finished with aggregate FAILED (NODES_FAILED).\n")
	assert.Equal(t, "RESUME", outcome)
	assert.Equal(t, "netrun_1", id)
	_, outcome, id = parseRunOutput("NO-OP: Run netrun_2 is already SUCCESS; nothing was executed.\n")
	assert.Equal(t, "NOOP", outcome)
	assert.Equal(t, "netrun_2", id)
	obj, outcome, id := parseRunOutput(`{"outcome":"NEW","run_id":"netrun_3","invocation_id":"inv"}` + "\n")
	assert.Equal(t, "NEW", outcome)
	assert.Equal(t, "netrun_3", id)
	assert.Equal(t, "inv", obj["invocation_id"])
	_, outcome, id = parseRunOutput("Error [NETWORK_INVALID]: no\n")
	assert.Empty(t, outcome)
	assert.Empty(t, id)
}
