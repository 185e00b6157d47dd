package kintone

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSweepScopeDeletesOnlyTheScope(t *testing.T) {
	c, f := newFixture(t)
	n, err := c.SweepScope(context.Background())
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"1", "2", "3", "4"}, f.deleted[appAudit], "runs' invocations/attempts, the resolution and the force-release audit")
	require.ElementsMatch(t, []string{"1", "2", "3", "4", "5"}, f.deleted[appState], "run, node state, lock, tombstone, hold")
	require.Equal(t, 9, n)
	require.Empty(t, f.deleted[appLog], "the JOB log is never cleaned")
	require.Equal(t, []string{"DELETE /k/v1/records.json", "DELETE /k/v1/records.json"}, f.writes, "audit first, then state")
}
