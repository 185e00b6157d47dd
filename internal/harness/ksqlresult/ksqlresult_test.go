package ksqlresult

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Read keys the results by the attempt id they echo, keeps milliseconds, and names a file it
// cannot parse while returning the others; a work dir without results says so.
func TestReadKeysResultsByAttempt(t *testing.T) {
	work := t.TempDir()
	_, err := Read(work)
	require.ErrorIs(t, err, ErrNoResults)

	meta := filepath.Join(work, "metadata")
	require.NoError(t, os.MkdirAll(meta, 0o755))
	write := func(name, body string) { require.NoError(t, os.WriteFile(filepath.Join(meta, name), []byte(body), 0o600)) }
	write("attempt_a.json", `{"kind":"EXECUTION_RESULT","attemptId":"attempt_a","executionId":"e1","startedAt":"2026-12-06T10:00:01.234Z","finishedAt":"2026-12-06T10:00:01.500Z","durationMs":266}`)
	write("attempt_b.json", `{"attemptId":"attempt_b","startedAt":null,"finishedAt":"2026-12-06T10:00:02.000Z","durationMs":0}`)
	write("attempt_c.json", `{"attemptId":"attempt_c","startedAt":"2026-12-06T10:0`)
	write("notes.txt", "not a result")

	got, err := Read(work)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "execution result attempt_c.json")
	require.Len(t, got, 2)
	start, finish, err := got["attempt_a"].Times()
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 12, 6, 10, 0, 1, 234_000_000, time.UTC), start)
	assert.Equal(t, time.Date(2026, 12, 6, 10, 0, 1, 500_000_000, time.UTC), finish)
	assert.Equal(t, int64(266), got["attempt_a"].DurationMS)
	start, _, err = got["attempt_b"].Times()
	require.NoError(t, err)
	assert.True(t, start.IsZero(), "startedAt null: not started")

	bad := Result{AttemptID: "x", FinishedAt: "yesterday"}
	_, _, err = bad.Times()
	assert.False(t, errors.Is(err, ErrNoResults))
	assert.ErrorContains(t, err, `finishedAt "yesterday"`)
}
