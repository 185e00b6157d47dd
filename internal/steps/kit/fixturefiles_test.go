package kit

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// The preflight sees the whole argument the step receives, not a file name picked out of it
// (issue 42 item 1: "../../../evil/networks/network-success.yaml" was checked as
// features/fixtures/networks/network-success.yaml).
func TestFixturesOfKeepsTheWholeArgument(t *testing.T) {
	got := FixtureRefs([]string{
		`Given the network fixture "../../../evil/networks/network-success.yaml"`,
		`And the network fixture "network-midfail.yaml" with node "n1" running "/tmp/evil/job.sql"`,
		`When FlowNet runs the network while the holder, a standalone kSQL-Flow, holds the job lock of node "n1" with "../x.sql"`,
		`Given the network fixture "../../../evil/networks/network-success.yaml"`, // once
		`Then nothing names a fixture here`,
	})
	assert.Equal(t, []FixtureRef{
		{Kind: scope.FixtureNetworks, Name: "../../../evil/networks/network-success.yaml", Step: `Given the network fixture "../../../evil/networks/network-success.yaml"`},
		{Kind: scope.FixtureNetworks, Name: "network-midfail.yaml", Step: `And the network fixture "network-midfail.yaml" with node "n1" running "/tmp/evil/job.sql"`, At: 1},
		{Kind: scope.FixtureJobs, Name: "/tmp/evil/job.sql", Step: `And the network fixture "network-midfail.yaml" with node "n1" running "/tmp/evil/job.sql"`, At: 1},
		{Kind: scope.FixtureJobs, Name: "../x.sql", Step: `When FlowNet runs the network while the holder, a standalone kSQL-Flow, holds the job lock of node "n1" with "../x.sql"`, At: 2},
	}, got)
}

// Every quoted .yaml or .sql argument in the feature files is a fixture the preflight
// resolves: a new step that reads a fixture must have its expression in fixtureSteps.
// And every expression there is one the library registers (no stale entry): the kit's own
// here, the exported ones the groups above register in ../index_test.go.
func TestFixtureStepsCoverTheFeatures(t *testing.T) {
	idx := &stepdef.Index{}
	AddStepsTo(stepdef.Registry{Index: idx})
	registered := map[string]bool{}
	for _, d := range idx.Defs() {
		registered[d.Expr] = true
	}
	for _, e := range FixtureExprsAbove {
		registered[e] = true
	}
	for _, fs := range fixtureSteps {
		assert.True(t, registered[fs.re.String()], "fixtureSteps lists an expression no step registers: %s", fs.re)
	}

	fsys := os.DirFS("../../../features")
	m, err := runner.LoadManifest(fsys, "manifest.yaml")
	require.NoError(t, err)
	feats, err := runner.Discover(fsys, ".", m)
	require.NoError(t, err)
	quoted := regexp.MustCompile(`"([^"]+\.(?:yaml|sql))"`)
	checked := 0
	for _, f := range feats {
		seen := map[string]bool{}
		for _, r := range FixtureRefs(f.StepText) {
			seen[r.Name] = true
		}
		for _, line := range f.StepText {
			for _, m := range quoted.FindAllStringSubmatch(line, -1) {
				checked++
				assert.True(t, seen[m[1]], "%s:%d: %q names fixture %q, which FixtureRefs does not see (add its expression to fixtureSteps)", f.Path, f.Line, line, m[1])
			}
		}
	}
	assert.NotZero(t, checked, "no feature names a fixture: the test checked nothing")
}

func TestPlainLabel(t *testing.T) {
	require.NoError(t, plainLabel("app start off"))
	for _, l := range []string{"../../x", `a\b`, "a/b"} {
		assert.ErrorContains(t, plainLabel(l), "holds a path separator", l)
	}
}

// The steps resolve their fixture through the preflight's resolver: given an escaping path
// they fail with its reason and render nothing (before, the step rendered the file it was
// given, outside the folder the preflight had checked). The CSV fixture step: csv/csvfixture_test.go.
func TestFixtureStepsRefuseEscapingPaths(t *testing.T) {
	tmp := t.TempDir()
	fixtures := filepath.Join(tmp, "features", "fixtures")
	files := map[string]string{
		"features/fixtures/networks/network-success.yaml": "schema_version: 1\nnetwork_id: x\nnodes:\n  - {id: n1, job_id: j, sql: ../jobs/j.sql}\n",
		"features/fixtures/jobs/j.sql":                    "-- @ksql name: j\nSELECT 1;\n",
		"evil/networks/network-success.yaml":              "schema_version: 1\nnetwork_id: x\nnodes:\n  - {id: n1, job_id: j, sql: ../jobs/j.sql}\n",
		"evil/jobs/j.sql":                                 "-- @ksql name: j\nDELETE FROM x;\n",
	}
	for p, c := range files {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
	st, err := scenario.New("x", nil, t.TempDir(), nil)
	require.NoError(t, err)
	sc, err := scope.New("x", time.Now(), nil)
	require.NoError(t, err)
	*SceneKey.Of(st) = Scene{Suite: &Suite{FixturesDir: fixtures}, St: st}
	FixtureKey.Of(st).Begin(sc)
	ctx := scenario.With(context.Background(), st)

	escape := "../../../evil/networks/network-success.yaml"
	d := FixtureDomain{}
	for name, call := range map[string]func() error{
		"network fixture": func() error { return d.theNetworkFixture(ctx, escape) },
		"as network":      func() error { return d.theNetworkFixtureAs(ctx, escape, "local") },
		"swapped SQL": func() error {
			return d.theNetworkFixtureWithSwap(ctx, "network-success.yaml", "n1", "../../../evil/jobs/j.sql")
		},
		"label with a separator": func() error { return d.theNetworkFixtureAs(ctx, "network-success.yaml", "../../out") },
	} {
		err := call()
		require.Error(t, err, name)
		assert.Regexp(t, `escapes features/fixtures/(networks|jobs)|holds a path separator`, err.Error(), name)
	}
	entries, err := os.ReadDir(st.WorkDir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was rendered into the work dir")
	left, err := filepath.Glob(filepath.Join(tmp, "*"))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{filepath.Join(tmp, "features"), filepath.Join(tmp, "evil")}, left, "nothing was rendered beside the suite")

	require.NoError(t, d.theNetworkFixture(ctx, "network-success.yaml"), "a clean name renders")
	assert.Equal(t, "network-success.yaml", FixturesOf(ctx).FileName())
}
