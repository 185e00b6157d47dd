package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
