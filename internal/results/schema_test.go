package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func loadJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m), path)
	return m
}

// requireValid fails the test with every schema problem of the archive.
func requireValid(t *testing.T, dir string) {
	t.Helper()
	probs, err := ValidateArchive(dir)
	require.NoError(t, err)
	var lines []string
	for _, p := range probs {
		lines = append(lines, p.String())
	}
	require.Empty(t, lines, "schema problems in %s", dir)
}

// The schema coverage checker itself finds a missing and an extra property.
func TestCoverTypeFindsMissingAndExtraProperties(t *testing.T) {
	var probs []string
	type two struct {
		A string `json:"a"`
		B int    `json:"b,omitempty"`
	}
	s := map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string"}, "c": map[string]any{}}, "additionalProperties": false}
	coverType(s, s, reflect.TypeFor[two](), "x", &probs)
	assert.ElementsMatch(t, []string{`x: field "b" is not in the schema`, `x: schema property "c" is no field of results.two`}, probs)
}

// coverType compares Go type typ with schema node s (of root document root), at path at.
func coverType(root, s map[string]any, typ reflect.Type, at string, probs *[]string) {
	if ref, ok := s["$ref"].(string); ok {
		s = resolveRef(root, ref)
		if s == nil {
			*probs = append(*probs, at+": unresolved $ref "+ref)
			return
		}
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case typ == reflect.TypeFor[time.Time]():
		if s["format"] != "date-time" {
			*probs = append(*probs, at+": a time, but the schema has no date-time format")
		}
	case typ.Kind() == reflect.Struct:
		props, _ := s["properties"].(map[string]any)
		if s["additionalProperties"] != false {
			*probs = append(*probs, at+": an object schema must refuse additional properties")
		}
		seen := map[string]bool{}
		for f := range typ.Fields() {
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			seen[name] = true
			ps, ok := props[name].(map[string]any)
			if !ok {
				*probs = append(*probs, at+": field "+`"`+name+`"`+" is not in the schema")
				continue
			}
			coverType(root, ps, f.Type, at+"."+name, probs)
		}
		for k := range props {
			if !seen[k] {
				*probs = append(*probs, at+": schema property "+`"`+k+`"`+" is no field of "+typ.String())
			}
		}
	case typ.Kind() == reflect.Slice:
		items, ok := s["items"].(map[string]any)
		if !ok {
			*probs = append(*probs, at+": a list, but the schema has no items")
			return
		}
		coverType(root, items, typ.Elem(), at+"[]", probs)
	case typ.Kind() == reflect.Map:
		ap, ok := s["additionalProperties"].(map[string]any)
		if !ok {
			*probs = append(*probs, at+": a map, but the schema has no additionalProperties schema")
			return
		}
		coverType(root, ap, typ.Elem(), at+"{}", probs)
	}
}

func resolveRef(root map[string]any, ref string) map[string]any {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = root
	for _, tok := range strings.Split(rest, "/") {
		m, _ := cur.(map[string]any)
		cur = m[tok]
	}
	m, _ := cur.(map[string]any)
	return m
}

// Every schema with a schema_version says the version the writer writes.
func TestSchemasCarryTheSchemaVersion(t *testing.T) {
	for _, n := range []string{SchemaScenario, SchemaRun, SchemaGate} {
		doc := loadJSON(t, "schema/"+n+".schema.json")
		sv := doc["properties"].(map[string]any)["schema_version"].(map[string]any)
		assert.Equal(t, float64(SchemaVersion), sv["const"], n)
		assert.Contains(t, doc["description"], "schema_version "+jsonNumber(SchemaVersion), n)
	}
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

// The schema documents describe what the writer really produces: an archive with a failed
// scenario carrying every optional field, a minimal one, a gate record and a final run.json
// (the real archives of a sandbox run, a gate run and merged shards are validated in
// internal/app/cli's tests).
func TestSchemasMatchWrittenFiles(t *testing.T) {
	a, err := Create(t.TempDir(), "all", time.Now(), testRedactor())
	require.NoError(t, err)
	requireValid(t, a.Dir()) // the provisional run.json

	full := sampleScenario("p2-16-01", StatusFailed)
	full.Reason = "cleanup failed"
	full.Steps[0].Line = 4
	full.Steps[0].Start = full.Start
	setup := int64(12)
	full.SetupMS = &setup
	yes, no := true, false
	full.Processes[0].Signal = "SIGKILL"
	full.Processes[0].ExitCode = nil
	full.Processes[0].Start = full.Start
	full.Processes[0].OutputSummarized, full.Processes[0].StdoutPresent, full.Processes[0].StderrPresent = true, &yes, &no
	full.Barriers[0].Name, full.Barriers[0].Process, full.Barriers[0].ReleasedAt = "long read", "run-network", full.End
	full.Cleanup = Cleanup{OK: false, Actions: []string{"x"}, Error: "boom"}
	full.Notes = []Note{{What: "trial", Detail: "lost"}}
	full.Attempts = []Attempt{{Node: "n1", AttemptNo: 1, Status: "SUCCESS", ResultCode: "OK", InvocationID: "inv", StartedAt: full.Start.Truncate(time.Minute), FinishedAt: full.Start.Truncate(time.Minute), DurationSec: 0.025}}
	full.TrafficLog = []TrafficLine{{Process: "run-network", At: full.Start, Method: "PUT", Path: "/k/v1/record.json", App: "4257", RecordID: "3", RecordKey: "R1:abc", Fields: []string{"status"}, Blocked: true, Heartbeat: true, Status: 200, DurationMS: 1.5, Error: "reset"}}
	full.Waits = []Wait{
		{Name: "RunStatus", What: "run status FAILED", LimitMS: 360000, ElapsedMS: 1200, Outcome: WaitReached, Checks: 5, LastObservation: "status=RUNNING", Start: full.Start},
		{What: "poller exit", LimitMS: 2000, ElapsedMS: 2000, Outcome: WaitTimedOut, Checks: 20, LastError: "kintone 503"},
	}
	require.NoError(t, a.WriteScenario(full))
	require.NoError(t, a.WriteScenario(&Scenario{ID: "minimal", Status: StatusNotRun}))
	a.SetGate(&GateRecord{Gate: "g", Definition: "features/gates/g.yaml", DefinitionSHA256: "00", Required: "@p2-16-01", SUT: GateSUT{Commit: "c"},
		Scenarios: []GateScenario{{ID: "p2-16-01", Series: "p2-16", Required: true}}})
	sums := append(a.Summaries(), ScenarioSummary{ID: "x", Status: StatusNotRun, NotRunCategory: NotRunTag, Reason: "filtered"})
	code := 1
	run := &Run{RunnerVersion: "1", Flowtest: &FlowtestBuild{Version: "1", Commit: "abc", Modified: true}, FeaturesDigest: "sha256:" + strings.Repeat("a", 64), Target: "sandbox", Profile: "p", OS: "linux", TagExpression: "@x", Label: "x",
		SUT:         SUTIdentity{Commit: "c", CommitSource: "checkout", Branch: "main", Dirty: true, Versions: map[string]string{"a": "1"}},
		Environment: map[string]string{"k": "v"}, RunOrder: []string{"p2-16-01"}, Scenarios: sums, End: time.Now(), Command: []string{"flowtest", "run"}, ExitCode: &code,
		Runner:   &RunnerCost{WallMS: 1, CPUMS: 1, SetupP50MS: 1, SetupP95MS: 1, SetupMaxMS: 1, SlowestSetups: []ScenarioTime{{ID: "p2-16-01", MS: 12}}},
		Evidence: []EvidenceRow{{Criterion: "c", Environment: "e", Result: "r", Limits: "l", Scenarios: []string{"p2-16-01"}}}}
	require.NoError(t, a.Finish(run))
	require.FileExists(t, filepath.Join(a.Dir(), GateFile))
	requireValid(t, a.Dir())
}

// A deliberately wrong archive: each wrong thing is one problem, named by file and JSON
// pointer.
func TestValidateArchiveFindsWhatIsWrong(t *testing.T) {
	a, err := Create(t.TempDir(), "all", time.Now(), testRedactor())
	require.NoError(t, err)
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-01", StatusPassed)))
	require.NoError(t, a.Finish(&Run{Target: "sandbox", End: time.Now()}))
	requireValid(t, a.Dir())

	rec := loadJSON(t, filepath.Join(a.Dir(), "scenarios", "p2-16-01.json"))
	rec["bogus"] = true                                                     // a field the schema does not know
	delete(rec, "status")                                                   // a required field missing
	rec["steps"].([]any)[1].(map[string]any)["duration_ms"] = "700"         // a string for an integer
	rec["barriers"].([]any)[0].(map[string]any)["at"] = "29 Nov 2026 10:11" // not RFC 3339
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir(), "scenarios", "p2-16-01.json"), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir(), "extra.json"), []byte(`{}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir(), "cucumber.json"), []byte(`[{`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir(), "scenarios", TempPrefix+"x.json"), []byte(`half`), 0o644))

	probs, err := ValidateArchive(a.Dir())
	require.NoError(t, err)
	type where struct{ file, ptr string }
	var got []where
	for _, p := range probs {
		got = append(got, where{p.File, p.Pointer})
		assert.NotEmpty(t, p.Message, p)
	}
	assert.ElementsMatch(t, []where{
		{"scenarios/p2-16-01.json", ""}, // bogus: additional property
		{"scenarios/p2-16-01.json", ""}, // status missing
		{"scenarios/p2-16-01.json", "/steps/1/duration_ms"},
		{"scenarios/p2-16-01.json", "/barriers/0/at"},
		{"extra.json", ""},
		{"cucumber.json", ""},
	}, got, probs)
	text := strings.Join(func() []string {
		var s []string
		for _, p := range probs {
			s = append(s, p.String())
		}
		return s
	}(), "\n")
	for _, want := range []string{"'bogus'", "'status'", "/steps/1/duration_ms", "date-time", "no schema describes this file", "not JSON"} {
		assert.Contains(t, text, want)
	}

	// No run.json is a problem; a folder that is not there is an error.
	require.NoError(t, os.Remove(filepath.Join(a.Dir(), "run.json")))
	probs, err = ValidateArchive(a.Dir())
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(probs, func(p SchemaProblem) bool { return p.File == "run.json" }), probs)
	_, err = ValidateArchive(filepath.Join(a.Dir(), "nope"))
	assert.Error(t, err)
}

// ValidateJSON checks one document (the evidence command's output has no archive).
func TestValidateJSON(t *testing.T) {
	ok := `{"before":{"archive":"a","revision":"r","environment":"e","command":"c","exit_code":"1","state":"complete"},` +
		`"after":{"archive":"b","revision":"r","environment":"e","command":"c","exit_code":"0","state":"complete"},"rows":[]}`
	probs, err := ValidateJSON(SchemaEvidence, "evidence", []byte(ok))
	require.NoError(t, err)
	assert.Empty(t, probs)
	probs, err = ValidateJSON(SchemaEvidence, "evidence", []byte(strings.Replace(ok, `"rows":[]`, `"rows":[{"scenario":"x"}]`, 1)))
	require.NoError(t, err)
	require.NotEmpty(t, probs)
	assert.Equal(t, "/rows/0", probs[0].Pointer)
	probs, err = ValidateJSON(SchemaEvidence, "evidence", []byte("not json"))
	require.NoError(t, err)
	assert.Len(t, probs, 1)
	_, err = ValidateJSON("nope", "x", []byte("{}"))
	assert.Error(t, err)
}
