package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ksqlflow/flowtest/internal/app/defects"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefectsRefusesUnknownNames(t *testing.T) {
	r := flowtest(t, nil, "defects", "--only", "no-such-defect")
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "no defect named no-such-defect")
}

// The CI subset of the planted defects, end to end: each broken sandbox is built, its
// scenarios run against it and fail on the declared assertion. The table is logged so CI
// shows it.
func TestFastDefectsAreCaught(t *testing.T) {
	t.Parallel() // a long end-to-end run that mostly waits: the others of its kind run beside it
	if testing.Short() {
		t.Skip("planted-defect runs skipped in -short mode")
	}
	// The go command's own settings (GOCACHE, GOFLAGS, GOTOOLCHAIN…) reach the builds.
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GO") {
			env = append(env, kv)
		}
	}
	// The control — every declared scenario passes on the correct sandbox — is the package's
	// one acceptance run (the same sandbox binary), checked below; the defects run beside it
	// instead of after a control run of their own.
	r := flowtest(t, env, "defects", "--fast", "--no-control")
	t.Logf("flowtest defects --fast:\n%s", r.stdout)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)

	cat, err := defects.LoadCatalogue(filepath.Join(repoRoot(), defects.CatalogueFile), nil)
	require.NoError(t, err)
	for _, d := range cat.Defects {
		if !d.Fast {
			continue
		}
		want := "yes"
		if len(d.Catches) == 0 && len(d.Awaiting) > 0 {
			want = "not yet covered"
		}
		line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(d.Name) + `\s.*$`).FindString(r.stdout)
		if assert.NotEmpty(t, line, "table row of %s", d.Name) {
			assert.Contains(t, line, want, "row of %s", d.Name)
			assert.NotContains(t, line, "ESCAPED")
		}
	}
	assert.NotContains(t, r.stdout, "ESCAPED")

	// The control: the acceptance run's records of the same scenarios, judged as
	// `flowtest defects --control-from` judges them.
	acc, dir := acceptanceRun(t)
	require.Equal(t, 0, acc.code, "the acceptance run (the control) failed:\n%s", acc.stdout)
	dr := &defects.Run{Root: repoRoot(), GoBin: "go", Work: t.TempDir(), Log: io.Discard, Ctx: context.Background()}
	var fast []defects.Defect
	for _, d := range cat.Defects {
		if d.Fast {
			fast = append(fast, d)
		}
	}
	rows, err := dr.ControlFromArchive(dir, fast)
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	for _, row := range rows {
		assert.Equal(t, defects.VerdictControlOK, row.Verdict, "control: %s on the correct sandbox: %s", row.Scenario, row.Why)
	}
	assert.Regexp(t, `\d+ caught, 0 escaped, \d+ not yet covered`, r.stdout)
}

// writeControlArchive writes an archive of two scenario records (a passed, b failed) whose
// run.json names the sandbox digest given.
func writeControlArchive(t *testing.T, target, digest string) string {
	return writeControlArchiveOf(t, target, digest, "reference")
}

// writeControlArchiveOf is writeControlArchive of a run that drove the product kind given.
func writeControlArchiveOf(t *testing.T, target, digest, product string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scenarios"), 0o755))
	for id, status := range map[string]string{"a": "passed", "b": "failed"} {
		rec := fmt.Sprintf(`{"schema_version":1,"id":%q,"status":%q,"status_reason":"x","duration_ms":1500,"series":"s","tags":[],"steps":[],"assertions":[],"processes":[],"barriers":[],"traffic":{},"cleanup":{"ok":true,"actions":[]}}`, id, status)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "scenarios", id+".json"), []byte(rec), 0o644))
	}
	run := fmt.Sprintf(`{"schema_version":1,"target":%q,"state":"complete","environment":{"sandbox_sha256":%q},"product":{"kind":%q},"scenarios":[]}`, target, digest, product)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), []byte(run), 0o644))
	return dir
}

// --control-from judges the archive's records as the control run would, and accepts only an
// archive of the sandbox target made with the correct sandbox of this checkout.
func TestControlFromArchive(t *testing.T) {
	r := &defects.Run{Root: repoRoot(), GoBin: "go", Work: t.TempDir(), Log: io.Discard, Ctx: context.Background()}
	digest, err := results.FileSHA256(filepath.Join(binDir, "flowsandbox"+exe())) // TestMain built it from this checkout
	require.NoError(t, err)
	sel := []defects.Defect{
		{Name: "d1", Catches: []defects.Catch{{Scenario: "a"}, {Scenario: "b"}}},
		{Name: "d2", Catches: []defects.Catch{{Scenario: "a"}, {Scenario: "c"}}},
	}
	rows, err := r.ControlFromArchive(writeControlArchive(t, "sandbox", digest), sel)
	require.NoError(t, err)
	require.Len(t, rows, 3, "each scenario once")
	got := map[string]string{}
	for _, row := range rows {
		got[row.Scenario] = row.Verdict
	}
	assert.Equal(t, map[string]string{"a": defects.VerdictControlOK, "b": defects.VerdictControlBad, "c": defects.VerdictControlBad}, got)

	_, err = r.ControlFromArchive(writeControlArchive(t, "sandbox", "0000"), sel)
	assert.ErrorContains(t, err, "is not the correct sandbox of this checkout")
	_, err = r.ControlFromArchive(writeControlArchive(t, "live", digest), sel)
	assert.ErrorContains(t, err, `target "live"`)
	_, err = r.ControlFromArchive(writeControlArchiveOf(t, "sandbox", digest, "real"), sel)
	assert.ErrorContains(t, err, "a control needs the reference")

	both := flowtest(t, nil, "defects", "--fast", "--no-control", "--control-from", t.TempDir())
	assert.Equal(t, 2, both.code)
	assert.Contains(t, both.stderr, "exclude each other")
}
