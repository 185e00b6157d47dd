package csv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/scope"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// The CSV fixture step resolves its file through the preflight's resolver as the network
// fixture steps do (kit/fixturefiles_test.go): an escaping path fails with its reason and
// renders nothing.
func TestCSVFixtureStepRefusesEscapingPaths(t *testing.T) {
	tmp := t.TempDir()
	fixtures := filepath.Join(tmp, "features", "fixtures")
	evil := filepath.Join(tmp, "evil", "networks", "network-success.yaml")
	require.NoError(t, os.MkdirAll(fixtures, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Dir(evil), 0o755))
	require.NoError(t, os.WriteFile(evil, []byte("id,name\n1,x\n"), 0o644))
	st, err := scenario.New("x", nil, t.TempDir(), nil)
	require.NoError(t, err)
	sc, err := scope.New("x", time.Now(), nil)
	require.NoError(t, err)
	*kit.SceneKey.Of(st) = kit.Scene{Suite: &kit.Suite{FixturesDir: fixtures}, St: st}
	kit.FixtureKey.Of(st).Begin(sc)
	ctx := scenario.With(context.Background(), st)

	err = csvIODomain{}.theCSVFixture(ctx, "../../../evil/networks/network-success.yaml", "UTF8")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "escapes features/fixtures")
	entries, err := os.ReadDir(st.WorkDir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was rendered into the work dir")
}
