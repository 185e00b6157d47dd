package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// decodeJSON decodes stdout strictly into v: one object, no field the shape does not have.
func decodeJSON(t *testing.T, stdout string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "stdout is one JSON object of the documented shape:\n%s", stdout)
	require.False(t, dec.More(), "nothing after the object")
}

// list --json: every scenario in run order, the selection and the totals, decoded by
// encoding/json; the same counts as the text's last line.
func TestListJSON(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main([]string{"list", "--json", "--features", "../../../features", "--tags", "@m5"}, nil, &out, &errb, nil), errb.String())
	var got listJSON
	decodeJSON(t, out.String(), &got)
	require.NotEmpty(t, got.Scenarios)
	first := got.Scenarios[0]
	assert.Equal(t, listScenarioJSON{Position: 1, ID: "m5-serial-success", Series: "m5", Acceptance: []string{"serial-success", "job-log-correlation"},
		Needs: []string{}, Tags: []string{"@m5-serial-success", "@m5", "@acc-serial-success", "@acc-job-log-correlation"},
		FeatureFile: "m5/m5-serial-success.feature", Line: first.Line, Selected: true, Runs: true}, first)
	assert.Positive(t, first.Line)
	selected := 0
	for i, s := range got.Scenarios {
		assert.Equal(t, i+1, s.Position)
		hasM5 := strings.Contains(" "+strings.Join(s.Tags, " ")+" ", " @m5 ")
		assert.Equal(t, hasM5, s.Selected, "%s: selected exactly when --tags @m5 matches", s.ID)
		if !s.Selected {
			assert.False(t, s.Runs)
			assert.Equal(t, "filtered by tag expression", s.Reason, s.ID)
		} else {
			selected++
		}
	}
	assert.Equal(t, len(got.Scenarios), got.Totals.Scenarios)
	assert.Equal(t, got.Totals.Scenarios, got.Totals.Acceptance+got.Totals.Extended)
	assert.Equal(t, selected, got.Totals.Selected)
	assert.Equal(t, selected, got.Totals.WithFeature+got.Totals.NotImplemented)

	var text, e2 bytes.Buffer
	require.Equal(t, 0, Main([]string{"list", "--features", "../../../features", "--tags", "@m5"}, nil, &text, &e2, nil))
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	assert.True(t, strings.HasPrefix(lines[len(lines)-1], strconv.Itoa(got.Totals.Selected)+" of "+strconv.Itoa(got.Totals.Scenarios)+" scenarios selected"), lines[len(lines)-1])
}

// steps --json: each definition with its regexp, handler, file:line and users, decoded; the
// totals agree with the lists.
func TestStepsJSON(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main([]string{"steps", "--json", "--features", "../../../features"}, nil, &out, &errb, nil), errb.String())
	var got stepsJSON
	decodeJSON(t, out.String(), &got)
	require.Equal(t, got.Totals.Definitions, len(got.Definitions))
	assert.Positive(t, got.Totals.Steps)
	assert.Empty(t, got.Undefined)
	assert.Empty(t, got.Ambiguous)
	used := 0
	for _, d := range got.Definitions {
		assert.NotEmpty(t, d.Regexp)
		assert.NotEmpty(t, d.Handler)
		assert.True(t, strings.HasPrefix(d.File, "internal/steps/"), "%s: file relative to the module, got %q", d.Regexp, d.File)
		assert.Positive(t, d.Line, d.Regexp)
		if d.Uses > 0 {
			used++
			assert.NotEmpty(t, d.Scenarios, d.Regexp)
		}
	}
	assert.Equal(t, got.Totals.Definitions-got.Totals.Unused, used)
}

// check --json: PASS/FAIL per check; the details go through the console's redactor as the
// text does, and the output stays valid JSON.
func TestCheckJSONIsRedacted(t *testing.T) {
	const token = "tok3nS3cretValue9"
	rep := safety.Report{Checks: []safety.Check{
		{Name: "profile", Subject: "KSQL_FLOWNET_PROFILE", OK: true, Reason: `"e2e" (default)`},
		{Name: "token-origin", Subject: ".env", OK: false, Reason: "writable token " + token + " in .env"},
	}}
	red := redact.New(map[string]string{"KINTONE_TOKEN": token}, nil)
	var out bytes.Buffer
	require.NoError(t, writeJSON(&out, checkReport("sandbox", rep), red))
	assert.NotContains(t, out.String(), token)
	var got checkJSON
	decodeJSON(t, out.String(), &got)
	assert.Equal(t, "sandbox", got.Target)
	assert.False(t, got.Passed)
	assert.Equal(t, 1, got.Failed)
	require.Len(t, got.Checks, 2)
	assert.Equal(t, checkItemJSON{Name: "profile", Subject: "KSQL_FLOWNET_PROFILE", Verdict: "PASS", Detail: `"e2e" (default)`}, got.Checks[0])
	assert.Equal(t, "FAIL", got.Checks[1].Verdict)
	assert.Contains(t, got.Checks[1].Detail, "[REDACTED")
}

// The check command's --json end to end: the same checks as the text, as JSON.
func TestCheckCommandJSON(t *testing.T) {
	r := flowtest(t, nil, "check", "--json", "--tags", "@m5-serial-success")
	require.Equal(t, 0, r.code, r.stderr)
	var got checkJSON
	decodeJSON(t, r.stdout, &got)
	assert.True(t, got.Passed)
	assert.Equal(t, "sandbox", got.Target)
	names := map[string]checkItemJSON{}
	for _, c := range got.Checks {
		assert.Equal(t, "PASS", c.Verdict, c.Name)
		names[c.Name] = c
	}
	assert.Contains(t, names, "concurrency")
	assert.Contains(t, names, "steps-defined")
}

// check judges the concurrency the run will use, resolved the one way run resolves it (the
// sandbox default when nothing is configured, not the configuration's 1), and says where it
// came from; the run records the same number in run.json.
func TestCheckPrintsTheRunsConcurrency(t *testing.T) {
	concurrencyOf := func(env []string, args ...string) string {
		t.Helper()
		r := flowtest(t, env, append([]string{"check", "--json", "--tags", "@m5-serial-success"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var got checkJSON
		decodeJSON(t, r.stdout, &got)
		for _, c := range got.Checks {
			if c.Name == "concurrency" {
				return c.Detail
			}
		}
		t.Fatalf("no concurrency check in %s", r.stdout)
		return ""
	}
	def := strconv.Itoa(defaultConcurrency())
	assert.Equal(t, def+" (the sandbox default: 3 per core, 2 to 8, on "+strconv.Itoa(runtime.NumCPU())+" cores)", concurrencyOf(nil))
	assert.Equal(t, "3 (from FLOWTEST_CONCURRENCY in the environment)", concurrencyOf([]string{"FLOWTEST_CONCURRENCY=3"}))
	assert.Equal(t, "4 (from --concurrency)", concurrencyOf([]string{"FLOWTEST_CONCURRENCY=3"}, "--concurrency", "4"))

	out := t.TempDir()
	r := flowtest(t, nil, "run", "--out", out, "--tags", "@m5-serial-success")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	var run struct{ Environment map[string]string }
	data, err := os.ReadFile(filepath.Join(archiveDir(t, r.stdout), "run.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &run))
	assert.Equal(t, def, run.Environment["concurrency"], "the run used what check printed")
}
