package pack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ksqlflow/flowtest/internal/results/internal/archivetest"
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

// A link to a file outside the archive, holding a secret, is refused (exit 2) as the same
// archive is by `archive pack`: the leak scan does not follow links, so "no leaks" would be
// said of a file it never read.
func TestVerifyRefusesALinkOutOfTheArchive(t *testing.T) {
	dir := archivetest.Finished(t)
	secret := filepath.Join(t.TempDir(), "flownet.env")
	require.NoError(t, os.WriteFile(secret, []byte("KSQL_FLOWNET_STATE_API_TOKEN="+archivetest.Token+"\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "logs", "flownet.log")))

	env := map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": archivetest.Token}
	var out, errb strings.Builder
	assert.Equal(t, 2, VerifyMain(dir, env, nil, &out, &errb), out.String()+errb.String())
	assert.Contains(t, errb.String(), "archive verify: refused: "+dir+": logs/flownet.log: a symbolic link (to "+secret+")")
	assert.NotContains(t, out.String(), "no leaks")
	_, err := Pack(dir, dir+PackExt)
	assert.ErrorContains(t, err, "logs/flownet.log is not a regular file", "pack refuses it too")
}
