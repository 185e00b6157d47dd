package proxy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
)

func TestBranchOfNamesTheOutcomeWithoutTheRequests(t *testing.T) {
	a := BranchOf([]string{"first: DONE/OK", "second: REJECTED/LOCK_CONFLICT"})
	b := BranchOf([]string{"first: REJECTED/LOCK_CONFLICT", "second: DONE/OK"})
	assert.Equal(t, []string{"DONE/OK", "REJECTED/LOCK_CONFLICT"}, a)
	assert.Equal(t, a, b, "which request won is not part of the branch")
}

// In an explored run a barrier on an explored process holds nothing: it is lifted, noted,
// and any step that would judge what it held fails; barriers of other processes stay.
func TestBarriersOfExploredProcessesAreLifted(t *testing.T) {
	st, err := scenario.New("x", nil, t.TempDir(), nil)
	require.NoError(t, err)
	assert.False(t, liftBarrier(st, "claim", "poller A"), "not an explored run")
	Explore(st, schedule.New(schedule.Config{}), []string{"poller A", "poller B"})
	assert.True(t, liftBarrier(st, "claim", "poller A"))
	assert.False(t, liftBarrier(st, "long read", "long poller"), "not an explored process")
	assert.True(t, lifted(st, "claim"))
	assert.False(t, lifted(st, "long read"))
	err = liftedError(st, "claim")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `orders the writes of "poller A"`)
	assert.NoError(t, liftedError(st, "long read"))
	assert.NotNil(t, exploredJobsGate(st), "the scope's kSQL-Flow proxy reports to the scheduler")
}
