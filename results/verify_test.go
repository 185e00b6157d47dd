package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/results/redact"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyCleanArchiveAndPlaceholders(t *testing.T) {
	red := redact.New(map[string]string{"A_TOKEN": "REDACTED"}, map[string]string{"7": "state"})
	a, err := Create(t.TempDir(), "x", time.Now(), red)
	require.NoError(t, err)
	require.NoError(t, a.WriteFile("log.txt", []byte("REDACTED app=7 took 17 ms, 7 rows")))
	leaks, err := redact.Verify(a.Dir(), map[string]string{"A_TOKEN": "REDACTED"}, []string{"7"})
	require.NoError(t, err)
	assert.Empty(t, leaks)

	_, err = redact.Verify(filepath.Join(a.Dir(), "log.txt"), nil, nil)
	assert.Error(t, err, "a file is not an archive folder")
}

func TestVerifyMain(t *testing.T) {
	dir := finishedArchive(t)
	env := map[string]string{"X_TOKEN": "leaky-token-value", "HOME": "/root"}
	var out, errb strings.Builder
	assert.Equal(t, 0, VerifyMain(dir, env, []string{"4257"}, &out, &errb), out.String()+errb.String())
	assert.Contains(t, out.String(), "no leaks")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x leaky-token-value"), 0o644))
	out.Reset()
	assert.Equal(t, 1, VerifyMain(dir, env, nil, &out, &errb))
	assert.Equal(t, "f.txt:2: secret X_TOKEN (raw)\n", out.String())
	assert.NotContains(t, out.String()+errb.String(), "leaky-token-value")

	assert.Equal(t, 2, VerifyMain(filepath.Join(dir, "nope"), env, nil, &out, &errb))

	// A folder that is no archive at all is not "clean".
	out.Reset()
	assert.Equal(t, 1, VerifyMain(t.TempDir(), env, nil, &out, &errb))
	assert.Contains(t, out.String(), "integrity: run.json: missing")
}
