package cli

// Issue 42, item 1: the preflight checks exactly the fixture files the steps will read (a
// path that leaves its folder is refused, however it leaves). Each case runs the built binary
// against a temporary suite and checks the exit code, the words of the refusal, that nothing
// was started and that no archive was written.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileSuite is a features folder whose own fixtures pass every rule, beside an "evil"
// folder (features/../evil) whose network of the same name runs a DELETE and whose deny
// network uses a production job id.
func hostileSuite(t *testing.T, feature string) (features, evil string) {
	t.Helper()
	goodSQL := "-- @ksql name: j\nSELECT 1;\n"
	features = featuresDir(t, oneScenarioManifest, map[string]string{
		"x/a.feature":                            feature,
		"fixtures/networks/network-x.yaml":       "schema_version: 1\nnetwork_id: x\nnodes:\n  - {id: n1, job_id: j, sql: ../jobs/j.sql}\n",
		"fixtures/networks/network-success.yaml": "schema_version: 1\nnetwork_id: x\nnodes:\n  - {id: n1, job_id: j, sql: ../jobs/j.sql}\n",
		"fixtures/networks/network-sql-out.yaml": "schema_version: 1\nnetwork_id: x\nnodes:\n  - {id: n1, job_id: j, sql: ../../../evil/jobs/evil.sql}\n",
		"fixtures/jobs/j.sql":                    goodSQL,
	})
	evil = filepath.Join(filepath.Dir(features), "evil")
	for p, content := range map[string]string{
		"networks/network-success.yaml": "schema_version: 1\nnetwork_id: x\nnodes:\n  - {id: n1, job_id: j, sql: ../jobs/evil.sql}\n",
		"networks/network-deny.yaml":    "schema_version: 1\nnetwork_id: x\nnodes:\n  - {id: n1, job_id: prod_nightly, sql: ../jobs/deny.sql}\n",
		"jobs/evil.sql":                 "-- @ksql name: j\nDELETE FROM customers;\n",
		"jobs/deny.sql":                 "-- @ksql name: prod_nightly\nSELECT 1;\n",
	} {
		full := filepath.Join(evil, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return features, evil
}

func TestFixturePathsThatLeaveTheirFolderAreRefused(t *testing.T) {
	deny := writeFile(t, "deny.txt", "job:prod_nightly\n")
	scenario := func(steps string) string {
		return "Feature: a\n  @a @s @acc-1\n  Scenario: a\n" + steps
	}
	_, evilAbs := hostileSuite(t, "")
	linked, _ := hostileSuite(t, scenario("    Given the network fixture \"network-link.yaml\"\n"))
	if err := os.Symlink(filepath.Join(filepath.Dir(linked), "evil", "networks", "network-success.yaml"), filepath.Join(linked, "fixtures", "networks", "network-link.yaml")); err != nil {
		t.Skipf("symlinks unsupported here: %v", err)
	}
	cases := []struct {
		name     string
		feature  string // "" when features is given
		features string
		args     []string
		want     []string
	}{
		{name: "relative escape with DELETE SQL, run",
			feature: scenario("    Given the network fixture \"../../../evil/networks/network-success.yaml\"\n"), args: []string{"run"},
			want: []string{`scenario a (x/a.feature:4): Given the network fixture "../../../evil/networks/network-success.yaml": fixture path "../../../evil/networks/network-success.yaml" escapes features/fixtures/networks`}},
		{name: "relative escape with DELETE SQL, check",
			feature: scenario("    Given the network fixture \"../../../evil/networks/network-success.yaml\"\n"), args: []string{"check"},
			want: []string{`x/a.feature:4`, "escapes features/fixtures/networks"}},
		{name: "relative escape with DELETE SQL, dry run",
			feature: scenario("    Given the network fixture \"../../../evil/networks/network-success.yaml\"\n"), args: []string{"run", "--dry-run"},
			want: []string{"escapes features/fixtures/networks"}},
		{name: "absolute escape to a production job id",
			feature: scenario("    Given the network fixture \"" + filepath.ToSlash(filepath.Join(evilAbs, "networks", "network-deny.yaml")) + "\"\n"), args: []string{"run", "--denylist-file", deny},
			want: []string{"network-deny.yaml\" is absolute; name a file inside features/fixtures/networks"}},
		{name: "relative escape to a production job id",
			feature: scenario("    Given the network fixture \"../../../evil/networks/network-deny.yaml\"\n"), args: []string{"check", "--denylist-file", deny},
			want: []string{"escapes features/fixtures/networks"}},
		{name: "symlink to outside", features: linked, args: []string{"run"},
			want: []string{`fixture path "network-link.yaml" is a symlink to outside features/fixtures/networks`}},
		{name: "network whose SQL leaves the jobs folder",
			feature: scenario("    Given the network fixture \"network-sql-out.yaml\"\n"), args: []string{"run"},
			want: []string{`node "n1": sql`, "escapes features/fixtures/jobs"}},
		{name: "swapped SQL escape",
			feature: scenario("    Given the network fixture \"network-x.yaml\" with node \"n1\" running \"../../../evil/jobs/evil.sql\"\n"), args: []string{"run"},
			want: []string{`fixture path "../../../evil/jobs/evil.sql" escapes features/fixtures/jobs`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			features := c.features
			if features == "" {
				features, _ = hostileSuite(t, c.feature)
			}
			r, work, out := refusedRun(t, append(c.args, "--features", features))
			all := r.stdout + r.stderr
			assert.Equal(t, 2, r.code, all)
			for _, w := range c.want {
				assert.Contains(t, all, w)
			}
			assert.NotContains(t, all, "preflight passed")
			assertNothingStarted(t, all, work, out)
		})
	}
}

// refusedRun runs flowtest with a fake sandbox, FlowNet and kSQL-Flow (each leaves a mark when
// started) and an archive root of its own.
func refusedRun(t *testing.T, args []string) (r result, work, out string) {
	t.Helper()
	work = t.TempDir()
	fake := fakeChild(t, work)
	out = filepath.Join(work, "results")
	require.NoError(t, os.Mkdir(out, 0o755))
	if args[0] == "run" { // check takes no --out, run lock or sandbox
		args = append(args, "--out", out, "--lock-dir", filepath.Join(work, "locks"), "--sandbox-bin", fake)
	}
	return flowtest(t, []string{"FLOWTEST_FLOWNET_BIN=" + fake, "KSQL_FLOW_BIN=" + fake}, args...), work, out
}

func assertNothingStarted(t *testing.T, all, work, out string) {
	t.Helper()
	assert.NotContains(t, all, "START ", "no scenario started")
	entries, _ := os.ReadDir(out)
	assert.Empty(t, entries, "a refused run writes no archive")
	_, err := os.Stat(filepath.Join(work, "child-started"))
	assert.True(t, os.IsNotExist(err), "no child process was started")
}
