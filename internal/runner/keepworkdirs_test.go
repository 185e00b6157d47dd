package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --keep-workdirs says where each kept dir is: one console line per scenario that ran, naming
// a dir that exists under the work root; without the flag there is no such line.
func TestKeptWorkDirsAreNamed(t *testing.T) {
	fsys := selfFeatures(nil)
	r := execute(t, fsys, plan(t, fsys, "@alpha or @delta"), Options{KeepWorkDirs: true})
	var kept []string
	for _, line := range strings.Split(r.progress.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "KEPT  "); ok {
			id, dir, ok := strings.Cut(rest, " work dir (unredacted): ")
			require.True(t, ok, line)
			kept = append(kept, id)
			st, err := os.Stat(dir)
			require.NoError(t, err, "%s: the named dir exists", id)
			assert.True(t, st.IsDir())
			assert.True(t, filepath.IsAbs(dir), dir)
		}
	}
	assert.Equal(t, []string{"alpha", "delta"}, kept)

	without := execute(t, fsys, plan(t, fsys, "@alpha"), Options{})
	assert.NotContains(t, without.progress.String(), "KEPT")
}
