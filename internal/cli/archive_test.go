package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/results"
	"github.com/ksqlflow/flowtest/results/pack"
	"github.com/ksqlflow/flowtest/results/redact"
)

// smallArchive writes a finished two-scenario archive without running a suite.
func smallArchive(t *testing.T) string {
	t.Helper()
	a, err := results.Create(t.TempDir(), "small", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), redact.New(nil, nil))
	require.NoError(t, err)
	order := []string{"a-01", "a-02"}
	a.SetOrder(order)
	for _, id := range order {
		start := time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC)
		require.NoError(t, a.WriteScenario(&results.Scenario{SchemaVersion: results.SchemaVersion, ID: id, Feature: "f", Series: "a",
			Tags: []string{"@" + id}, Status: results.StatusPassed, Start: start, End: start.Add(time.Second), DurationMS: 1000}))
	}
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", RunOrder: order, End: time.Now()}))
	return a.Dir()
}

func TestArchivePackRefusesToReplaceAPack(t *testing.T) {
	dir := smallArchive(t)
	pack := dir + pack.PackExt
	first := flowtest(t, nil, "archive", "pack", dir)
	require.Equal(t, 0, first.code, first.stdout+first.stderr)
	before, err := os.ReadFile(pack)
	require.NoError(t, err)

	// The folder changes (a note added), and the same pack name is asked for again.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "note.txt"), []byte("added later\n"), 0o644))
	again := flowtest(t, nil, "archive", "pack", dir)
	assert.Equal(t, 2, again.code, again.stdout+again.stderr)
	assert.Contains(t, again.stderr, pack+" exists and is not replaced")
	assert.Contains(t, again.stderr, "--force")
	after, err := os.ReadFile(pack)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the refused pack is untouched")

	forced := flowtest(t, nil, "archive", "pack", "--force", dir)
	require.Equal(t, 0, forced.code, forced.stdout+forced.stderr)
	after, err = os.ReadFile(pack)
	require.NoError(t, err)
	assert.NotEqual(t, before, after, "--force replaced it")
	v := flowtest(t, nil, "archive", "verify", pack)
	assert.Equal(t, 0, v.code, v.stdout+v.stderr)
}

func TestArchiveVerifyAndPackRefuseABrokenArchive(t *testing.T) {
	dir := smallArchive(t)
	rec := filepath.Join(dir, results.ScenarioDir, "a-02.json")
	data, err := os.ReadFile(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(rec, data[:len(data)/2], 0o644))

	v := flowtest(t, nil, "archive", "verify", dir)
	assert.Equal(t, 1, v.code, v.stdout+v.stderr)
	assert.Contains(t, v.stdout, "integrity: scenarios/a-02.json: not valid JSON")
	assert.NotContains(t, v.stdout, "no leaks")

	p := flowtest(t, nil, "archive", "pack", dir)
	assert.Equal(t, 1, p.code, p.stdout+p.stderr)
	assert.Contains(t, p.stdout, "integrity: scenarios/a-02.json")
	assert.NoFileExists(t, dir+pack.PackExt)
}
