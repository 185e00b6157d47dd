package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validate checks v against the subset of JSON Schema our schema files use: type, const,
// enum, required, properties, additionalProperties (false or a schema), items, maxLength.
func validate(schema map[string]any, v any, path string) []string {
	var errs []string
	if c, ok := schema["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		errs = append(errs, fmt.Sprintf("%s: want const %v, got %v", path, c, v))
	}
	if e, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return x == v }) {
		errs = append(errs, fmt.Sprintf("%s: %v not in enum %v", path, v, e))
	}
	if t, ok := schema["type"]; ok {
		types := []any{t}
		if ts, ok := t.([]any); ok {
			types = ts
		}
		if !slices.ContainsFunc(types, func(x any) bool { return jsonType(v, x.(string)) }) {
			errs = append(errs, fmt.Sprintf("%s: want type %v, got %T", path, t, v))
		}
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, r := range asStrings(schema["required"]) {
			if _, ok := val[r]; !ok {
				errs = append(errs, fmt.Sprintf("%s: missing required %q", path, r))
			}
		}
		for k, x := range val {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, validate(ps, x, path+"."+k)...)
			} else if ap, ok := schema["additionalProperties"]; ok {
				if b, isBool := ap.(bool); isBool && !b {
					errs = append(errs, fmt.Sprintf("%s: property %q not in the schema", path, k))
				} else if aps, ok := ap.(map[string]any); ok {
					errs = append(errs, validate(aps, x, path+"."+k)...)
				}
			}
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, x := range val {
				errs = append(errs, validate(items, x, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	case string:
		if ml, ok := schema["maxLength"].(float64); ok && len([]rune(val)) > int(ml) {
			errs = append(errs, fmt.Sprintf("%s: longer than %v", path, ml))
		}
	}
	return errs
}

func jsonType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "number":
		_, ok := v.(float64)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return false
}

func asStrings(v any) []string {
	var out []string
	xs, _ := v.([]any)
	for _, x := range xs {
		out = append(out, x.(string))
	}
	return out
}

func loadJSON(t *testing.T, path string) map[string]any {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m), path)
	return m
}

// The schema documents describe what the writer really produces, field for field.
func TestSchemasMatchWrittenFiles(t *testing.T) {
	a, err := Create(t.TempDir(), "all", time.Now(), testRedactor())
	require.NoError(t, err)
	full := sampleScenario("p2-16-01", StatusFailed)
	full.Reason = "cleanup failed"
	full.Steps[0].Line = 4
	full.Processes[0].Signal = "SIGKILL"
	full.Processes[0].ExitCode = nil
	full.Cleanup = Cleanup{OK: false, Actions: []string{"x"}, Error: "boom"}
	full.Waits = []Wait{
		{Name: "RunStatus", What: "run status FAILED", LimitMS: 360000, ElapsedMS: 1200, Outcome: WaitReached, Checks: 5, LastObservation: "status=RUNNING"},
		{What: "poller exit", LimitMS: 2000, ElapsedMS: 2000, Outcome: WaitTimedOut, Checks: 20, LastError: "kintone 503"},
	}
	require.NoError(t, a.WriteScenario(full))
	require.NoError(t, a.WriteScenario(&Scenario{ID: "minimal", Status: StatusNotRun}))

	scenSchema := loadJSON(t, "schema/scenario.schema.json")
	for _, f := range []string{"p2-16-01.json", "minimal.json"} {
		doc := loadJSON(t, filepath.Join(a.Dir(), "scenarios", f))
		assert.Empty(t, validate(scenSchema, doc, f))
	}

	sums := append(a.Summaries(), ScenarioSummary{ID: "x", Status: StatusNotRun, NotRunCategory: NotRunTag, Reason: "filtered"})
	run := &Run{RunnerVersion: "1", Target: "sandbox", Profile: "p", OS: "linux", TagExpression: "@x", Label: "x",
		SUT:         SUTIdentity{Commit: "c", CommitSource: "checkout", Branch: "main", Dirty: true, Versions: map[string]string{"a": "1"}},
		Environment: map[string]string{"k": "v"}, RunOrder: []string{"p2-16-01"}, Scenarios: sums, End: time.Now(),
		Evidence: []EvidenceRow{{Criterion: "c", Environment: "e", Result: "r", Limits: "l", Scenarios: []string{"p2-16-01"}}}}
	require.NoError(t, a.Finish(run))
	runSchema := loadJSON(t, "schema/run.schema.json")
	assert.Empty(t, validate(runSchema, loadJSON(t, filepath.Join(a.Dir(), "run.json")), "run.json"))

	// A provisional run.json is valid too.
	b, err := Create(t.TempDir(), "all", time.Now(), testRedactor())
	require.NoError(t, err)
	assert.Empty(t, validate(runSchema, loadJSON(t, filepath.Join(b.Dir(), "run.json")), "provisional run.json"))

	// The validator itself rejects what it should.
	assert.NotEmpty(t, validate(scenSchema, map[string]any{"schema_version": 1.0, "bogus": true}, "bad"))
}
