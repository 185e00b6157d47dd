package pack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ksqlflow/flowtest/results/internal/archivetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyMain(t *testing.T) {
	dir := archivetest.Finished(t)
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
