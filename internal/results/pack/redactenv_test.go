package pack

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/internal/archivetest"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 42: a setting an operator happens to have under a secret-like name
// (FEATURE_TOKEN_REFRESH=true, CACHE_TOKEN_TTL=1) must not corrupt the archive — every JSON
// file parses and matches its schema, file names and numbers stay, `archive verify` passes —
// while a real secret of the same environment, also split over two lines of a stderr tail, is
// still redacted everywhere.
func TestArchiveStaysValidWithSettingsNamedLikeSecrets(t *testing.T) {
	const real = "Xq7-kT0ken-Zm9vYmFy2"
	env := map[string]string{"FEATURE_TOKEN_REFRESH": "true", "CACHE_TOKEN_TTL": "1", "KSQL_FLOWNET_LOG_API_TOKEN": real, "HOME": "/root"}
	red := redact.New(redact.SecretsFromEnv(env), map[string]string{"4257": "state"})
	a, err := results.Create(t.TempDir(), "m5-serial-success", time.Date(2026, 12, 1, 10, 11, 12, 0, time.UTC), red)
	require.NoError(t, err)
	ids := []string{"m5-serial-success", "p2-16-01"}
	for _, id := range ids {
		s := archivetest.Scenario(id, results.StatusFailed)
		s.Processes[0].StderrTail = "refresh=true ttl=1 writer token " + real[:8] + "\n" + real[8:] + "\nexit 1"
		s.Steps[0].Error = "token " + real + " refused"
		require.NoError(t, a.WriteScenario(s))
	}
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", End: time.Now(), RunOrder: ids}))

	for _, id := range ids {
		assert.FileExists(t, filepath.Join(a.Dir(), "scenarios", id+".json"), "record file names are not rewritten")
	}
	n := 0
	require.NoError(t, filepath.WalkDir(a.Dir(), func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.NotContains(t, string(data), real[:8], p)
		assert.NotContains(t, string(data), real[8:], p)
		if strings.HasSuffix(p, ".json") {
			n++
			var v any
			assert.NoError(t, json.Unmarshal(data, &v), "%s is not valid JSON", p)
		}
		return nil
	}))
	assert.GreaterOrEqual(t, n, 3)
	probs, err := results.ValidateArchive(a.Dir())
	require.NoError(t, err)
	assert.Empty(t, probs)
	var rec results.Scenario
	data, err := os.ReadFile(filepath.Join(a.Dir(), "scenarios", "p2-16-01.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rec))
	assert.Equal(t, results.SchemaVersion, rec.SchemaVersion)
	assert.Equal(t, "refresh=true ttl=1 writer token [REDACTED:KSQL_FLOWNET_LOG_API_TOKEN]\n\nexit 1", rec.Processes[0].StderrTail)
	assert.Equal(t, 2026, rec.Start.Year())

	var out, errb strings.Builder
	assert.Equal(t, 0, VerifyMainWith(a.Dir(), VerifyOptions{Env: env, AppIDs: []string{"4257"}}, &out, &errb), out.String()+errb.String())
}
