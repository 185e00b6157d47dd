package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 42, item 3, end to end: settings an operator happens to have under secret-like names
// (FEATURE_TOKEN_REFRESH=true, CACHE_TOKEN_TTL=1) no longer wreck the archive: the scenario
// passes, the run exits 0, every JSON file parses and matches its schema, record file names
// are intact and `archive verify` passes; each variable is named in a warning on the console
// (never its value), and the --format junit file is written beside it, clean.
func TestSettingsNamedLikeSecretsKeepTheArchiveValid(t *testing.T) {
	if testing.Short() {
		t.Skip("a sandbox run")
	}
	out := t.TempDir()
	env := []string{"FEATURE_TOKEN_REFRESH=true", "CACHE_TOKEN_TTL=1"}
	r := flowtest(t, env, "run", "--product", "reference", "--tags", "@m5-serial-success", "--out", out,
		"--format", "junit:"+filepath.Join(out, "junit.xml"))
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	for _, name := range []string{"FEATURE_TOKEN_REFRESH", "CACHE_TOKEN_TTL"} {
		assert.Regexp(t, `flowtest run: warning: `+name+` is not treated as a secret \(its value is shorter than 8 characters; `, r.stderr)
	}
	assert.NotContains(t, r.stdout+r.stderr, "REDACTED:FEATURE_TOKEN_REFRESH")
	assert.NotContains(t, r.stdout+r.stderr, "REDACTED:CACHE_TOKEN_TTL")
	dir := archiveDir(t, r.stdout)
	assert.FileExists(t, filepath.Join(dir, "scenarios", "m5-serial-success.json"))
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if strings.HasSuffix(p, ".json") {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.True(t, json.Valid(data), "%s is valid JSON", p)
			assert.NotContains(t, string(data), "REDACTED:CACHE_TOKEN_TTL", p)
		}
		return nil
	}))
	requireSchemaValid(t, dir)
	junit, err := os.ReadFile(filepath.Join(out, "junit-m5-serial-success.xml"))
	require.NoError(t, err)
	assert.Contains(t, string(junit), `failures="0"`)
	v := flowtest(t, env, "archive", "verify", dir)
	assert.Equal(t, 0, v.code, v.stdout+v.stderr)
}

// evidenceArchive is a finished one-scenario archive written without knowing token (under
// another environment), whose command line holds it.
func evidenceArchive(t *testing.T, status, token string) string {
	t.Helper()
	a, err := results.Create(t.TempDir(), "ev", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), redact.New(nil, nil))
	require.NoError(t, err)
	start := time.Date(2026, 12, 1, 10, 0, 1, 0, time.UTC)
	s := &results.Scenario{SchemaVersion: results.SchemaVersion, ID: "a-01", Feature: "f", Series: "a", Tags: []string{"@a-01"},
		Status: status, Start: start, End: start.Add(time.Second), DurationMS: 1000}
	if status == results.StatusFailed {
		s.Reason = "assertion failed"
	}
	require.NoError(t, a.WriteScenario(s))
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", RunOrder: []string{"a-01"}, End: time.Now(),
		Command: []string{"flowtest", "run", "--tags", "@a-01", "--sut-commit", token}}))
	return a.Dir()
}

// What `flowtest evidence` prints and writes passes this environment's redactor, and its
// --out file is leak-checked (issue 42: every file flowtest writes).
func TestEvidenceIsRedacted(t *testing.T) {
	const token = "Ev1dence-T0ken-7a6b5c4d3e"
	before, after := evidenceArchive(t, results.StatusFailed, token), evidenceArchive(t, results.StatusPassed, token)
	out := filepath.Join(t.TempDir(), "test-evidence.md")
	env := []string{"KINTONE_API_TOKEN=" + token}
	r := flowtest(t, env, "evidence", "--before", before, "--after", after, "--out", out)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	for what, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "--out": string(data)} {
		assert.NotContains(t, text, token, what)
	}
	assert.Contains(t, string(data), "[REDACTED:KINTONE_API_TOKEN]")
	j := flowtest(t, env, "evidence", "--before", before, "--after", after, "--json")
	require.Equal(t, 0, j.code, j.stdout+j.stderr)
	assert.NotContains(t, j.stdout, token)
	assert.True(t, json.Valid([]byte(j.stdout)), j.stdout)
}
