package results_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/evidence"
	"github.com/ksqlflow/flowtest/internal/results/pack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The schemas and the Go types that write the files name the same fields, both ways: a
// field added to the writer without its schema fails here even before any run produces it,
// and a schema property no writer produces fails too.
func TestSchemasCoverTheGoTypes(t *testing.T) {
	for name, typ := range map[string]reflect.Type{
		results.SchemaScenario: reflect.TypeFor[results.Scenario](),
		results.SchemaRun:      reflect.TypeFor[results.Run](),
		results.SchemaGate:     reflect.TypeFor[results.GateRecord](),
		results.SchemaEvidence: reflect.TypeFor[evidence.BeforeAfter](),
	} {
		doc := results.LoadJSON(t, "schema/"+name+".schema.json")
		var probs []string
		results.CoverType(doc, doc, typ, name, &probs)
		sort.Strings(probs)
		assert.Empty(t, probs, name)
	}
}

// A pack is checked without unpacking it: the same problems as its folder.
func TestValidatePack(t *testing.T) {
	a, err := results.Create(t.TempDir(), "all", time.Now(), results.TestRedactor())
	require.NoError(t, err)
	require.NoError(t, a.WriteScenario(results.SampleScenario("p2-16-01", results.StatusPassed)))
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", End: time.Now()}))
	good := filepath.Join(t.TempDir(), "good"+pack.PackExt)
	_, err = pack.Pack(a.Dir(), good)
	require.NoError(t, err)
	probs, err := results.ValidatePack(good)
	require.NoError(t, err)
	assert.Empty(t, probs)

	rec := results.LoadJSON(t, filepath.Join(a.Dir(), "scenarios", "p2-16-01.json"))
	rec["cleanup"].(map[string]any)["ok"] = "yes"
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir(), "scenarios", "p2-16-01.json"), data, 0o644))
	bad := filepath.Join(t.TempDir(), "bad"+pack.PackExt)
	_, err = pack.Pack(a.Dir(), bad)
	require.NoError(t, err)
	probs, err = results.ValidatePack(bad)
	require.NoError(t, err)
	require.Len(t, probs, 1)
	assert.Equal(t, results.SchemaProblem{File: "scenarios/p2-16-01.json", Pointer: "/cleanup/ok", Message: probs[0].Message}, probs[0])

	_, err = results.ValidatePack(filepath.Join(a.Dir(), "run.json"))
	assert.Error(t, err, "not a gzip tar")
}

// `archive verify` (package pack) fails on every way an archive breaks that CheckIntegrity
// names, and says which.
func TestArchiveVerifyFailsOnABrokenArchive(t *testing.T) {
	for _, tc := range results.BrokenArchives() {
		t.Run(tc.Name, func(t *testing.T) {
			dir := results.FinishedArchive(t)
			tc.Break(t, dir)
			var out, errb bytes.Buffer
			assert.Equal(t, 1, pack.VerifyMainWith(dir, pack.VerifyOptions{}, &out, &errb), "archive verify must fail: %s", tc.Name)
			assert.Contains(t, out.String(), "integrity: "+tc.Want)
			assert.NotContains(t, out.String(), "no leaks")
		})
	}
}
