package gate

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/app/gate/gatetest"
	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// manifestItems is the real manifest, planned with no selection.
func manifestItems(t testing.TB) []runner.Item {
	t.Helper()
	features := filepath.Join("..", "..", "..", "features")
	m, err := runner.LoadManifest(os.DirFS(features), "manifest.yaml")
	require.NoError(t, err)
	feats, err := runner.DiscoverNamed(os.DirFS(features), ".", m, features)
	require.NoError(t, err)
	return runner.Plan(m, feats, runner.Selection{GOOS: runtime.GOOS})
}

// planGate is Plan on the git repository at dir.
func planGate(ctx context.Context, g *Def, items []runner.Item, target, commit, dir, since string) (*results.GateRecord, []string, error) {
	repo, err := OpenGit(dir)
	if err != nil {
		return nil, nil, err
	}
	return Plan(ctx, g, items, target, commit, repo, since)
}

// The shipped gates are valid: r2 requires the v1.0.0 gate's 18 scenarios and carries CSV
// over; full requires all 43.
func TestShippedGates(t *testing.T) {
	items := manifestItems(t)
	features := filepath.Join("..", "..", "..", "features")
	r2, err := Load(features, "r2", items)
	require.NoError(t, err)
	req := r2.RequiredIDs(items)
	require.Len(t, req, 18)
	count := map[string]int{}
	for _, id := range req {
		count[strings.SplitN(id, "-", 3)[0]+"-"+strings.SplitN(id, "-", 3)[1]]++
	}
	assert.Equal(t, 6, count["p2-01"], "requests 6")
	assert.Equal(t, 5, count["p2-11"], "START 5")
	assert.Equal(t, 5, count["p2-16"], "lifecycle 5")
	assert.Contains(t, req, "m5-serial-success")
	assert.Contains(t, req, "m6-01-resume-identity")
	var series []string
	for _, r := range r2.Rules {
		series = append(series, r.Series)
		assert.Contains(t, r.Paths, "src/io/")
	}
	assert.Equal(t, []string{"csv1", "csv2"}, series)

	full, err := Load(features, "full", items)
	require.NoError(t, err)
	assert.Len(t, full.RequiredIDs(items), 43)
	assert.Empty(t, full.Rules)

	_, err = Load(features, "nope", items)
	require.ErrorContains(t, err, "gates in")
	assert.ErrorContains(t, err, "r2")
}

// A gate definition is strict: every mistake is refused with file:line, exit 2.
func TestGateDefinitionRefusals(t *testing.T) {
	items := manifestItems(t)
	head := "schema_version: 1\nname: g\n"
	cases := map[string]struct{ body, want string }{
		"unknown key":         {head + "required: \"@m5\"\nrequird_count: 5\n", "g.yaml:4: unknown key \"requird_count\""},
		"unknown id":          {head + "required: \"@m5-serial-sucess or @m6\"\n", "g.yaml:3: required: unknown scenario id or series @m5-serial-sucess (closest: @m5-serial-success"},
		"unknown series":      {head + "required: \"@m5\"\ncarry_over:\n  - {series: csv3, paths: [src/io/], justification: x}\n", "g.yaml:5: carry-over: unknown series \"csv3\""},
		"unknown rule key":    {head + "required: \"@m5\"\ncarry_over:\n  - series: csv1\n    path: [src/io/]\n", "g.yaml:6: unknown carry-over key \"path\""},
		"duplicate series":    {head + "required: \"@m5\"\ncarry_over:\n  - {series: csv1, paths: [a], justification: x}\n  - {series: csv1, paths: [b], justification: y}\n", "g.yaml:6: carry-over: series csv1 has a rule already (line 5)"},
		"series all required": {head + "required: \"@m5\"\ncarry_over:\n  - {series: m5, paths: [a], justification: x}\n", "every scenario of series m5 is required"},
		"no paths":            {head + "required: \"@m5\"\ncarry_over:\n  - {series: csv1, paths: [], justification: x}\n", "g.yaml:5: carry-over csv1: no paths"},
		"unsafe path":         {head + "required: \"@m5\"\ncarry_over:\n  - {series: csv1, paths: [../src], justification: x}\n", "not a clean path"},
		"absolute path":       {head + "required: \"@m5\"\ncarry_over:\n  - {series: csv1, paths: [/src/io], justification: x}\n", "must be relative"},
		"no justification":    {head + "required: \"@m5\"\ncarry_over:\n  - {series: csv1, paths: [src/io/]}\n", "no justification"},
		"count mismatch":      {head + "required: \"@m5\"\nrequired_count: 4\n", "g.yaml:4: required_count 4, but required \"@m5\" selects 5 scenarios"},
		"bad expression":      {head + "required: \"@m5 and\"\n", "g.yaml:3: required \"@m5 and\""},
		"no required":         {head + "title: x\n", "required: no tag expression"},
		"name mismatch":       {"schema_version: 1\nname: other\nrequired: \"@m5\"\n", "g.yaml:2: name \"other\" differs from the file's name \"g\""},
		"wrong version":       {"schema_version: 2\nname: g\nrequired: \"@m5\"\n", "g.yaml:1: schema_version 2, want 1"},
		"second document":     {head + "required: \"@m5\"\n---\nname: x\n", "a second YAML document"},
		"key twice":           {head + "required: \"@m5\"\nrequired: \"@m6\"\n", "given twice"},
		"list where string":   {head + "required: [\"@m5\"]\n", "g.yaml:3: required must be a tag expression"},
		"yaml syntax":         {head + "required: \"@m5\n", "g.yaml:3: YAML: "},
		"paths not a list":    {head + "required: \"@m5\"\ncarry_over:\n  - {series: csv1, paths: src/io/, justification: x}\n", "g.yaml:5: carry-over rule:"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "g.yaml")
			require.NoError(t, os.WriteFile(file, []byte(tc.body), 0o644))
			_, err := Parse(file, []byte(tc.body), items)
			require.Error(t, err)
			var ue refusal.Error
			require.ErrorAs(t, err, &ue, "a refusal (exit 2)")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPathCovered(t *testing.T) {
	assert.True(t, pathCovered("src/io/", "src/io/reader.ts"))
	assert.False(t, pathCovered("src/io/", "src/iox/reader.ts"))
	assert.True(t, pathCovered("src/io", "src/io/reader.ts"))
	assert.True(t, pathCovered("src/io", "src/io"))
	assert.False(t, pathCovered("src/io", "src/io2.ts"))
	assert.True(t, pathCovered("docs/execution-contract-*.md", "docs/execution-contract-v1.md"))
	assert.False(t, pathCovered("docs/*.md", "docs/sub/x.md"))
}

// sinceArchive writes an archive in which the given scenarios passed, on commit and target.
func sinceArchive(t *testing.T, commit, target string, passed ...string) string {
	t.Helper()
	a, err := results.Create(t.TempDir(), "m5", time.Now(), redact.New(nil, nil))
	require.NoError(t, err)
	a.SetOrder(passed) // a whole archive: --since-archive reads only one that passes CheckIntegrity
	for _, id := range passed {
		now := time.Now().UTC()
		require.NoError(t, a.WriteScenario(&results.Scenario{SchemaVersion: results.SchemaVersion, ID: id, Series: strings.SplitN(id, "-", 2)[0], Status: results.StatusPassed, Start: now, End: now}))
	}
	require.NoError(t, a.Finish(&results.Run{Target: target, SUT: results.SUTIdentity{Commit: commit}, RunOrder: passed, End: time.Now()}))
	return a.Dir()
}

var m5 = []string{"m5-serial-success", "m5-mid-failure", "m5-resume", "m5-lock-conflict", "m5-kill-unknown"}

func demoGate(t *testing.T, items []runner.Item) *Def {
	t.Helper()
	body := "schema_version: 1\nname: demo\nrequired: \"@m6-01-resume-identity\"\ncarry_over:\n  - {series: m5, paths: [src/io/], justification: \"M5 does not read src/io\"}\n"
	file := filepath.Join(t.TempDir(), "demo.yaml")
	g, err := Parse(file, []byte(body), items)
	require.NoError(t, err)
	return g
}

// The carry-over rule holds only with passing evidence on the same target and a diff that
// touches none of its paths; the record quotes the diff stat and the sha256 of each record.
func TestPlanGateCarryOver(t *testing.T) {
	items := manifestItems(t)
	g := demoGate(t, items)
	ctx := context.Background()

	docs, c0, c1 := gatetest.TwoCommitRepo(t, "docs/notes.md")
	since := sinceArchive(t, c0, "sandbox", m5...)
	rec, run, err := planGate(ctx, g, items, "sandbox", c1[:10], docs, since)
	require.NoError(t, err)
	assert.Equal(t, []string{"m6-01-resume-identity"}, run)
	assert.Equal(t, c1, rec.SUT.Commit, "the full commit id")
	require.Len(t, rec.CarryOver, 1)
	rule := rec.CarryOver[0]
	assert.True(t, rule.Holds, rule.Why)
	require.Len(t, rule.Diffs, 1)
	assert.Contains(t, rule.Diffs[0].Stat, "docs/notes.md")
	assert.Contains(t, rule.Diffs[0].Stat, "1 file changed")
	carried := 0
	for _, s := range rec.Scenarios {
		if s.Status == results.StatusCarriedOver {
			carried++
			require.NotNil(t, s.CarriedOver)
			assert.Equal(t, c0, s.CarriedOver.Commit)
			sum, err := results.FileSHA256(filepath.Join(since, s.CarriedOver.Record))
			require.NoError(t, err)
			assert.Equal(t, sum, s.CarriedOver.SHA256)
			assert.Contains(t, s.CarriedOver.DiffStat, "docs/notes.md")
			assert.Equal(t, "M5 does not read src/io", s.CarriedOver.Justification)
		}
	}
	assert.Equal(t, 5, carried)

	// The diff touches src/io: the series runs.
	io, c0, c1 := gatetest.TwoCommitRepo(t, "src/io/writer.ts")
	since = sinceArchive(t, c0, "sandbox", m5...)
	rec, run, err = planGate(ctx, g, items, "sandbox", c1, io, since)
	require.NoError(t, err)
	assert.False(t, rec.CarryOver[0].Holds)
	assert.Contains(t, rec.CarryOver[0].Why, "the SUT diff touches src/io/writer.ts")
	assert.Equal(t, append([]string{"m5-serial-success", "m5-mid-failure", "m5-resume", "m5-lock-conflict", "m5-kill-unknown"}, "m6-01-resume-identity"), run)

	// No evidence for one scenario, another target, no --since-archive: the series runs.
	docs, c0, c1 = gatetest.TwoCommitRepo(t, "docs/notes.md")
	for name, tc := range map[string]struct {
		since, want string
	}{
		"missing record": {sinceArchive(t, c0, "sandbox", m5[:4]...), "m5-kill-unknown: no record of it"},
		"other target":   {sinceArchive(t, c0, "live", m5...), "evidence does not carry across targets"},
		"no commit":      {sinceArchive(t, "", "sandbox", m5...), "names no SUT commit"},
		"no since":       {"", "no --since-archive"},
	} {
		rec, _, err := planGate(ctx, g, items, "sandbox", c1, docs, tc.since)
		require.NoError(t, err, name)
		assert.False(t, rec.CarryOver[0].Holds, name)
		assert.Contains(t, rec.CarryOver[0].Why, tc.want, name)
	}

	// A gate archive that carried m5 over hands on the original record, checked again.
	since = sinceArchive(t, c0, "sandbox", m5...)
	rec, _, err = planGate(ctx, g, items, "sandbox", c1, docs, since)
	require.NoError(t, err)
	chained, err := results.Create(t.TempDir(), "gate-demo", time.Now(), redact.New(nil, nil))
	require.NoError(t, err)
	chained.SetGate(rec)
	require.NoError(t, chained.Finish(&results.Run{Target: "sandbox", SUT: results.SUTIdentity{Commit: c1}, End: time.Now()}))
	rec2, _, err := planGate(ctx, g, items, "sandbox", c1, docs, chained.Dir())
	require.NoError(t, err)
	require.True(t, rec2.CarryOver[0].Holds, rec2.CarryOver[0].Why)
	for _, s := range rec2.Scenarios {
		if s.Status == results.StatusCarriedOver {
			assert.Equal(t, since, s.CarriedOver.Archive, "points to where it really passed")
			assert.Equal(t, c0, s.CarriedOver.Commit, "and diffs from that commit")
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(since, "scenarios", "m5-resume.json"), []byte(`{"tampered":true}`), 0o644))
	rec3, _, err := planGate(ctx, g, items, "sandbox", c1, docs, chained.Dir())
	require.NoError(t, err)
	assert.False(t, rec3.CarryOver[0].Holds)
	assert.Contains(t, rec3.CarryOver[0].Why, "the record changed")

	// A commit the repository does not have is refused.
	_, _, err = planGate(ctx, g, items, "sandbox", "deadbeef", docs, "")
	var ue refusal.Error
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "--sut-commit")
}

// Issue 42 (every input verified first): a --since-archive whose record of a scenario says
// failed while its run.json says passed carries nothing over; it is refused, naming the file.
func TestPlanGateRefusesASinceArchiveThatDoesNotHoldTogether(t *testing.T) {
	items := manifestItems(t)
	g := demoGate(t, items)
	docs, c0, c1 := gatetest.TwoCommitRepo(t, "docs/notes.md")
	since := sinceArchive(t, c0, "sandbox", m5...)
	rec := filepath.Join(since, results.ScenarioDir, "m5-resume.json")
	data, err := os.ReadFile(rec)
	require.NoError(t, err)
	edited := strings.Replace(string(data), `"status": "passed"`, `"status": "failed"`, 1)
	require.NotEqual(t, string(data), edited, "the record's status is rewritten")
	require.NoError(t, os.WriteFile(rec, []byte(edited), 0o644))
	_, _, err = planGate(context.Background(), g, items, "sandbox", c1, docs, since)
	require.Error(t, err)
	assert.True(t, refusal.Is(err), "%v", err)
	assert.ErrorContains(t, err, "scenarios/m5-resume.json: status failed, run.json says passed for m5-resume")
}
