package scope

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureTree makes <tmp>/features/fixtures/{networks,jobs} with one file in each and an
// outside folder beside features/ holding a file of the same name.
func fixtureTree(t *testing.T) (fixtures, outside string) {
	t.Helper()
	tmp := t.TempDir()
	fixtures = filepath.Join(tmp, "features", "fixtures")
	outside = filepath.Join(tmp, "evil", "networks")
	for _, d := range []string{filepath.Join(fixtures, "networks", "sub"), filepath.Join(fixtures, "jobs"), outside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{
		filepath.Join(fixtures, "networks", "network-success.yaml"),
		filepath.Join(fixtures, "networks", "sub", "network-x.yaml"),
		filepath.Join(fixtures, "jobs", "a.sql"),
		filepath.Join(outside, "network-success.yaml"),
	} {
		require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	}
	return fixtures, outside
}

func TestResolveFixtureConfinesToItsFolder(t *testing.T) {
	fixtures, outside := fixtureTree(t)
	nets := filepath.Join(fixtures, "networks")
	if err := os.Symlink(filepath.Join(outside, "network-success.yaml"), filepath.Join(nets, "network-link-out.yaml")); err != nil {
		t.Skipf("symlinks unsupported here: %v", err)
	}
	require.NoError(t, os.Symlink("network-success.yaml", filepath.Join(nets, "network-link-in.yaml")))
	require.NoError(t, os.Symlink(outside, filepath.Join(nets, "dir-out")))
	require.NoError(t, os.Symlink(filepath.Join("..", "jobs", "a.sql"), filepath.Join(nets, "network-to-jobs.yaml")))
	realNets, err := filepath.EvalSymlinks(nets)
	require.NoError(t, err)

	ok := []struct{ name, wantName string }{
		{"network-success.yaml", "network-success.yaml"},
		{"./network-success.yaml", "network-success.yaml"},
		{"sub/../network-success.yaml", "network-success.yaml"},
		{"sub/network-x.yaml", "sub/network-x.yaml"},
		{"network-link-in.yaml", "network-success.yaml"}, // inside -> inside: the target is what runs
	}
	for _, c := range ok {
		got, err := ResolveFixture(fixtures, FixtureNetworks, c.name)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.wantName, got.Name, c.name)
		assert.Equal(t, filepath.Join(realNets, filepath.FromSlash(c.wantName)), got.Path, c.name)
	}

	bad := []struct{ name, want string }{
		{"../../../evil/networks/network-success.yaml", `fixture path "../../../evil/networks/network-success.yaml" escapes features/fixtures/networks`},
		{"../jobs/a.sql", `escapes features/fixtures/networks`}, // another kind's folder is outside too
		{"sub/../../network-success.yaml", "escapes features/fixtures/networks"},
		{"..", "escapes features/fixtures/networks"},
		{filepath.Join(outside, "network-success.yaml"), "is absolute; name a file inside features/fixtures/networks"},
		{"/etc/passwd", "is absolute"},
		{"network-link-out.yaml", `fixture path "network-link-out.yaml" is a symlink to outside features/fixtures/networks`},
		{"dir-out/network-success.yaml", "is a symlink to outside features/fixtures/networks"},
		{"network-to-jobs.yaml", "is a symlink to outside features/fixtures/networks"},
		{"sub", "is not a regular file"},
		{".", "names the folder"},
		{"", "fixture path is empty"},
		{"network-missing.yaml", "names no file in features/fixtures/networks"},
	}
	for _, c := range bad {
		_, err := ResolveFixture(fixtures, FixtureNetworks, c.name)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}

// The fixtures folder itself behind a symlink (a checkout on a linked disk) is fine: both
// sides are resolved before they are compared.
func TestResolveFixtureRootBehindSymlink(t *testing.T) {
	fixtures, _ := fixtureTree(t)
	link := filepath.Join(t.TempDir(), "linked-fixtures")
	if err := os.Symlink(fixtures, link); err != nil {
		t.Skipf("symlinks unsupported here: %v", err)
	}
	got, err := ResolveFixture(link, FixtureJobs, "a.sql")
	require.NoError(t, err)
	assert.Equal(t, "a.sql", got.Name)
	_, err = ResolveFixture(link, FixtureJobs, "../networks/network-success.yaml")
	require.ErrorContains(t, err, "escapes "+filepath.Join(link, "jobs"))
}

// A network whose sql: leaves the SQL folder is refused at the node's line when the caller
// confines it (the steps and the preflight do); without SQLFolder it renders as before.
func TestRenderConfinesSQLToItsFolder(t *testing.T) {
	fixtures, outside := fixtureTree(t)
	require.NoError(t, os.WriteFile(filepath.Join(outside, "evil.sql"), []byte("-- @ksql name: j\nDELETE FROM x;\n"), 0o644))
	net := filepath.Join(fixtures, "networks", "network-evil.yaml")
	yaml := "schema_version: 1\nnetwork_id: n\nnodes:\n  - id: a\n    job_id: j\n    sql: ../../../evil/networks/evil.sql\n"
	require.NoError(t, os.WriteFile(net, []byte(yaml), 0o644))
	sc, err := New("confine", t0, nil)
	require.NoError(t, err)
	_, err = sc.Render(net, t.TempDir(), RenderOptions{SQLFolder: filepath.Join(fixtures, "jobs")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `network-evil.yaml:6: node "a": sql `)
	assert.Contains(t, err.Error(), "escapes features/fixtures/jobs")
	_, err = sc.Render(net, t.TempDir(), RenderOptions{})
	require.NoError(t, err)
}
