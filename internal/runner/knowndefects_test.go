package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/merge"
)

// evidenceRepo is a repository root holding the evidence the catalogue texts name.
var evidenceRepo = fstest.MapFS{
	"docs/product-findings.md": {Data: []byte("# Product findings\n\n## Known product defects\n\n### KPD-1\n\ntext\n\n<a id=\"kpd-two\"></a>\n")},
	"docs/notes.txt":           {Data: []byte("x")},
}

func selfManifestParsed(t *testing.T) *Manifest {
	m, err := ParseManifest("manifest.yaml", []byte(selfManifest))
	require.NoError(t, err)
	return m
}

const kpdEntry = `  - id: KPD-1
    package: "@rex0220/ksql-flownet"
    version: 1.0.0
    scenario: beta
    assertion: colour of the widget
    evidence: docs/product-findings.md#kpd-1
    summary: the widget is red
`

func TestKnownDefectsCatalogue(t *testing.T) {
	ds, err := ParseKnownDefects("k.yaml", []byte("schema_version: 1\ndefects:\n"+kpdEntry), selfManifestParsed(t), evidenceRepo)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, results.KnownDefect{ID: "KPD-1", Package: "@rex0220/ksql-flownet", Version: "1.0.0", Scenario: "beta",
		Assertion: "colour of the widget", Evidence: "docs/product-findings.md#kpd-1", Summary: "the widget is red"}, ds[0])
	ds, err = ParseKnownDefects("k.yaml", []byte("schema_version: 1\ndefects: []\n"), selfManifestParsed(t), evidenceRepo)
	require.NoError(t, err)
	assert.Empty(t, ds)
}

// The repository's own catalogue loads against the repository's manifest and files.
func TestTheRepositorysKnownDefectsLoad(t *testing.T) {
	m, err := LoadManifest(os.DirFS("../../features"), "manifest.yaml")
	require.NoError(t, err)
	_, err = LoadKnownDefects(filepath.Join("..", "..", "features"), m)
	require.NoError(t, err)
}

func TestKnownDefectsRefusalsNameFileAndLine(t *testing.T) {
	const head = "schema_version: 1\ndefects:\n"
	with := func(old, new string) string {
		return head + replaceOnce(kpdEntry, old, new)
	}
	cases := []struct{ name, text, want string }{
		{"empty file", "", "k.yaml: the known-defects catalogue is empty"},
		{"yaml syntax", head + "  - {id: KPD-1\n", "k.yaml:3: YAML:"},
		{"unknown top key", "schema_version: 1\ndefect: []\n", `k.yaml:2: unknown key "defect" (known: schema_version, defects)`},
		{"no defects list", "schema_version: 1\n", "k.yaml:1: no defects list"},
		{"schema version", "schema_version: 2\ndefects: []\n", "k.yaml:1: schema_version must be 1"},
		{"unknown entry key", with("    summary:", "    sumary:"), `k.yaml:9: unknown defect key "sumary"`},
		{"missing field", with("    version: 1.0.0\n", ""), "k.yaml:3: defect entry has no version"},
		{"empty field", with("assertion: colour of the widget", `assertion: ""`), "k.yaml:7: assertion must be a non-empty string"},
		{"bad id", with("id: KPD-1", "id: KPD-01"), `k.yaml:3: id "KPD-01" is not KPD-<n>`},
		{"duplicate id", head + kpdEntry + replaceOnce(kpdEntry, "scenario: beta", "scenario: alpha"), "k.yaml:10: id KPD-1 listed twice (first at line 3)"},
		{"unknown scenario", with("scenario: beta", "scenario: bet"), `k.yaml:6: KPD-1: scenario "bet" is not in the run-order manifest`},
		{"same scenario and product twice", head + kpdEntry + replaceOnce(kpdEntry, "id: KPD-1", "id: KPD-2"), "k.yaml:13: KPD-2: scenario beta already has a known defect on @rex0220/ksql-flownet@1.0.0 (line 6)"},
		{"missing evidence file", with("docs/product-findings.md#kpd-1", "docs/findings.md#kpd-1"), `k.yaml:8: KPD-1: evidence "docs/findings.md#kpd-1": no such file in the repository`},
		{"evidence anchor missing", with("#kpd-1", "#kpd-9"), `k.yaml:8: KPD-1: evidence "docs/product-findings.md#kpd-9": docs/product-findings.md holds no heading or anchor "kpd-9"`},
		{"evidence outside the repository", with("docs/product-findings.md#kpd-1", "../secret.md"), "k.yaml:8: KPD-1: evidence \"../secret.md\": not a clean path"},
		{"anchor on a non-Markdown file", with("docs/product-findings.md#kpd-1", "docs/notes.txt#x"), "an #anchor needs a Markdown file"},
		{"entry not a mapping", head + "  - KPD-1\n", "k.yaml:3: a defect entry must be a mapping"},
		{"second document", head + kpdEntry + "---\ndefects: []\n", "k.yaml:10: a second YAML document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseKnownDefects("k.yaml", []byte(c.text), selfManifestParsed(t), evidenceRepo)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
	// An explicit anchor is evidence too.
	_, err := ParseKnownDefects("k.yaml", []byte(with("#kpd-1", "#kpd-two")), selfManifestParsed(t), evidenceRepo)
	assert.NoError(t, err)
}

func replaceOnce(s, old, new string) string {
	i := len(s)
	for j := 0; j+len(old) <= len(s); j++ {
		if s[j:j+len(old)] == old {
			i = j
			break
		}
	}
	if i == len(s) {
		panic("replaceOnce: " + old + " not in the entry")
	}
	return s[:i] + new + s[i+len(old):]
}

// kpdSteps: beta's "a step that fails" fails by an assertion whose what is given; alpha and
// delta pass.
func kpdSteps(what string) func(sc *godog.ScenarioContext, reg stepdef.Registry) {
	return func(sc *godog.ScenarioContext, reg stepdef.Registry) {
		reg.Step(`^a step that passes$`, func() error { return nil })
		reg.Step(`^another step that passes$`, func(ctx context.Context) error { return nil })
		reg.Step(`^a step that fails$`, func(ctx context.Context) error {
			if what == "" {
				return errors.New("deliberate failure without an assertion")
			}
			return scenario.From(ctx).On("state.NETWORK_RUN.status").Assert(what, "blue", "red", false)
		})
	}
}

var (
	kpdBeta = results.KnownDefect{ID: "KPD-1", Package: "@rex0220/ksql-flownet", Version: "1.0.0", Scenario: "beta",
		Assertion: "colour of the widget", Evidence: "docs/product-findings.md#kpd-1", Summary: "red"}
	kpdAlpha = results.KnownDefect{ID: "KPD-2", Package: "@rex0220/ksql-flownet", Version: "1.0.0", Scenario: "alpha",
		Assertion: "colour of the widget", Evidence: "docs/product-findings.md#kpd-1", Summary: "fixed since"}
	real100 = &results.Product{Kind: results.ProductReal, Source: "pinned", Package: "@rex0220/ksql-flownet", Version: "1.0.0"}
)

func kpdRun(t *testing.T, tags, what string, product *results.Product, defects ...results.KnownDefect) *selfRun {
	t.Helper()
	fsys := selfFeatures(nil)
	return execute(t, fsys, plan(t, fsys, tags), Options{Initialize: kpdSteps(what), KnownDefects: defects,
		Run: &results.Run{Target: "self-test", Product: product}})
}

func mark(r *selfRun, id string) *results.KnownDefectMark {
	for _, s := range r.res.Scenarios {
		if s.ID == id {
			return s.KnownDefect
		}
	}
	return nil
}

// The exit code of a run with known defects: 0 when every failure is an applying known
// defect failing by its declared assertion; 1 for any other failure, for a known defect
// that does not apply (reference model, another version), and for one that no longer
// reproduces. The archive stays whole and schema-valid.
func TestKnownDefectExitCodes(t *testing.T) {
	other := *real100
	other.Version = "1.0.1"
	reference := &results.Product{Kind: results.ProductReference, Source: "sandbox"}
	cases := []struct {
		name    string
		tags    string
		what    string
		product *results.Product
		defects []results.KnownDefect
		code    int
		beta    string // beta's outcome, "" for no mark
	}{
		{"declared failure on the real product", "@alpha or @beta", "colour of the widget in the hall", real100, []results.KnownDefect{kpdBeta}, ExitPassed, results.KDReproduced},
		{"a different assertion", "@alpha or @beta", "size of the widget", real100, []results.KnownDefect{kpdBeta}, ExitFailed, results.KDOtherFailure},
		{"a failure without an assertion", "@alpha or @beta", "", real100, []results.KnownDefect{kpdBeta}, ExitFailed, results.KDOtherFailure},
		{"another version", "@alpha or @beta", "colour of the widget", &other, []results.KnownDefect{kpdBeta}, ExitFailed, ""},
		{"the reference model", "@alpha or @beta", "colour of the widget", reference, []results.KnownDefect{kpdBeta}, ExitFailed, ""},
		{"no product named", "@alpha or @beta", "colour of the widget", nil, []results.KnownDefect{kpdBeta}, ExitFailed, ""},
		{"a known defect that no longer reproduces", "@alpha or @beta", "colour of the widget", real100, []results.KnownDefect{kpdBeta, kpdAlpha}, ExitFailed, results.KDReproduced},
		{"a known defect on the reference passes quietly", "@alpha", "", reference, []results.KnownDefect{kpdAlpha}, ExitPassed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := kpdRun(t, c.tags, c.what, c.product, c.defects...)
			assert.Equal(t, c.code, r.res.Code)
			m := mark(r, "beta")
			if c.beta == "" {
				assert.Nil(t, m)
			} else {
				require.NotNil(t, m)
				assert.Equal(t, c.beta, m.Outcome)
				assert.Equal(t, results.StatusFailed, statuses(r.res)["beta"], "a known defect is never passed")
			}
			_, run, err := results.ReadArchive(r.archive.Dir())
			require.NoError(t, err)
			require.NotNil(t, run.ExitCode)
			assert.Equal(t, c.code, *run.ExitCode)
			assert.Empty(t, results.CheckIntegrity(r.archive.Dir()))
			probs, err := results.ValidateArchive(r.archive.Dir())
			require.NoError(t, err)
			assert.Empty(t, probs)
		})
	}
}

// The console names the known defect on the END line, and a pass under an applying entry
// is flagged there and in the record.
func TestKnownDefectOnTheConsoleAndInTheRecord(t *testing.T) {
	r := kpdRun(t, "@alpha or @beta", "colour of the widget", real100, kpdBeta, kpdAlpha)
	out := r.progress.String()
	assert.Contains(t, out, "END   beta failed")
	assert.Contains(t, out, "— known product defect KPD-1 — step")
	assert.Contains(t, out, "— KPD-2 no longer reproduces on @rex0220/ksql-flownet@1.0.0: the product may be fixed; remove or update the entry")
	assert.Equal(t, results.StatusPassed, statuses(r.res)["alpha"])
	require.NotNil(t, mark(r, "alpha"))
	assert.Equal(t, results.KDNoLongerReproduces, mark(r, "alpha").Outcome)
	_, run, err := results.ReadArchive(r.archive.Dir())
	require.NoError(t, err)
	assert.Equal(t, "1 passed (1 known product defect(s) no longer reproduce (KPD-2): update the catalogue), 0 failed, 1 known product defect (KPD-1), 0 not run, 4 not selected, of 6", results.RunTotalsText(run))
}

// Merged shards keep the marks and decide the exit code by the same rule; shards of
// different products are refused.
func TestMergeKnowsKnownDefects(t *testing.T) {
	fsys := selfFeatures(nil)
	items := plan(t, fsys, "@alpha or @beta")
	shard := func(k int, p *results.Product, defects ...results.KnownDefect) merge.MergeInput {
		r := execute(t, fsys, Shard(items, k, 2, nil), Options{Initialize: kpdSteps("colour of the widget"), KnownDefects: defects,
			Run: &results.Run{Target: "self-test", Product: p}})
		scen, run, err := results.ReadArchive(r.archive.Dir())
		require.NoError(t, err)
		return merge.MergeInput{Dir: r.archive.Dir(), Run: run, Scenarios: scen}
	}
	m, err := merge.Merge([]merge.MergeInput{shard(1, real100, kpdBeta), shard(2, real100, kpdBeta)})
	require.NoError(t, err)
	assert.Equal(t, ExitPassed, *m.Run.ExitCode)
	assert.Equal(t, 1, m.Run.Totals.KnownDefects)

	m, err = merge.Merge([]merge.MergeInput{shard(1, real100, kpdBeta, kpdAlpha), shard(2, real100, kpdBeta, kpdAlpha)})
	require.NoError(t, err)
	assert.Equal(t, ExitFailed, *m.Run.ExitCode, "a known defect that no longer reproduces")
	assert.Equal(t, 1, m.Run.Totals.KnownDefectsNotReproduced)

	other := *real100
	other.Version = "1.0.1"
	_, err = merge.Merge([]merge.MergeInput{shard(1, real100, kpdBeta), shard(2, &other, kpdBeta)})
	assert.ErrorContains(t, err, "shards of one run drive one product")
}

// The progress line counts a reproduced known defect as the closing line does: apart from the
// failures.
func TestProgressLineCountsKnownDefectsApart(t *testing.T) {
	fsys := selfFeatures(nil)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	r := execute(t, fsys, plan(t, fsys, "@alpha or @beta"), Options{Initialize: kpdSteps("colour of the widget"), KnownDefects: []results.KnownDefect{kpdBeta},
		Run: &results.Run{Target: "self-test", Product: real100}, Status: &StatusOptions{Now: clock.now}})
	assert.Contains(t, r.progress.String(), "PROGRESS 2/2 done, 1 passed, 0 failed, 1 known product defect(s); elapsed")
}
