package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// requireSchemaValid fails the test with every schema problem of a real archive (the runs
// the acceptance tests make anyway: a sandbox run, shards and their merge, a gate run), so
// that a field the writer produces without its schema fails a test.
func requireSchemaValid(t *testing.T, dir string) {
	t.Helper()
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(repoRoot(), dir)
	}
	probs, err := results.ValidateArchive(dir)
	require.NoError(t, err)
	var lines []string
	for _, p := range probs {
		lines = append(lines, p.String())
	}
	require.Empty(t, lines, "schema problems in %s", dir)
}

// requireEvidenceValid checks `flowtest evidence --json` output against its schema.
func requireEvidenceValid(t *testing.T, data []byte) {
	t.Helper()
	probs, err := results.ValidateJSON(results.SchemaEvidence, "evidence --json", data)
	require.NoError(t, err)
	require.Empty(t, probs)
}

// archive verify fails on a record its schema refuses, naming file and place, for a folder
// and for its pack.
func TestArchiveVerifyChecksTheSchemas(t *testing.T) {
	a, err := results.Create(t.TempDir(), "all", time.Now(), redact.New(nil, nil))
	require.NoError(t, err)
	require.NoError(t, a.WriteScenario(&results.Scenario{ID: "m5-resume", Status: results.StatusPassed, Start: time.Now(), End: time.Now()}))
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", RunOrder: []string{"m5-resume"}, End: time.Now()}))
	ok := flowtest(t, nil, "archive", "verify", a.Dir())
	require.Equal(t, 0, ok.code, ok.stdout+ok.stderr)
	assert.Contains(t, ok.stdout, "matches its schema")

	file := filepath.Join(a.Dir(), "scenarios", "m5-resume.json")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(data, &rec))
	// A field no schema names: the record still parses and agrees with run.json (the
	// integrity check has nothing to say, and pack accepts the archive), only its schema
	// refuses it.
	rec["surprise"] = true
	data, err = json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data, 0o644))
	bad := flowtest(t, nil, "archive", "verify", a.Dir())
	assert.Equal(t, 1, bad.code, bad.stdout+bad.stderr)
	assert.Contains(t, bad.stdout, "schema: scenarios/m5-resume.json: ")
	assert.Contains(t, bad.stdout, "surprise")
	assert.NotContains(t, bad.stdout, "integrity: ")
	assert.Contains(t, bad.stderr, "1 schema problem(s)")

	pack := filepath.Join(t.TempDir(), "a.tar.gz")
	p := flowtest(t, nil, "archive", "pack", "--out", pack, a.Dir())
	require.Equal(t, 0, p.code, p.stdout+p.stderr)
	bad = flowtest(t, nil, "archive", "verify", pack)
	assert.Equal(t, 1, bad.code, bad.stdout+bad.stderr)
	assert.Contains(t, bad.stdout, "schema: scenarios/m5-resume.json: ")
	assert.Contains(t, bad.stdout, "surprise")
}
