package preflight

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fixture the launchers validate is built into flowtest (so the probe does not depend on
// the working directory); it must stay the suite's own network-success and its SQL files.
func TestProbeFixtureIsTheSuites(t *testing.T) {
	var n int
	err := fs.WalkDir(probeFixture, "probefixture", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		rel := strings.TrimPrefix(p, "probefixture/")
		built, err := probeFixture.ReadFile(p)
		require.NoError(t, err)
		suites, err := os.ReadFile(filepath.Join("..", "..", "..", "features", "fixtures", filepath.FromSlash(rel)))
		require.NoError(t, err)
		assert.Equal(t, string(suites), string(built),
			"internal/preflight/%s differs from features/fixtures/%s: copy it over", p, rel)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 4, n, "the network and its three SQL files")
}
