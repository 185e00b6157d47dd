package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/results"
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
