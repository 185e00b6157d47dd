package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func problemsText(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

// truncate cuts a file of the archive in half, as a crash in the middle of a write would.
func truncate(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, data[:len(data)/2], 0o644))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

// editJSON rewrites a JSON file of the archive through a generic map.
func editJSON(t *testing.T, file string, edit func(m map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	m := map[string]any{}
	require.NoError(t, json.Unmarshal(data, &m))
	edit(m)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, out, 0o644))
}

func TestCheckIntegrityOfAWholeArchive(t *testing.T) {
	dir := finishedArchive(t)
	assert.Empty(t, CheckIntegrity(dir))
}

// brokenArchive is a way to break a finished archive and the problems that must be named.
type brokenArchive struct {
	name    string
	breakIt func(t *testing.T, dir string)
	want    []string // each must appear in one problem line
}

// brokenArchives are the ways an archive breaks that CheckIntegrity must name, and so
// `archive verify` (TestArchiveVerifyFailsOnABrokenArchive, an external test).
func brokenArchives() []brokenArchive {
	rec1 := filepath.Join(ScenarioDir, "p2-16-01.json")
	return []brokenArchive{
		{"truncated run.json", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "run.json")) },
			[]string{"run.json: not valid JSON: it ends in the middle of a value", "truncated?"}},
		{"empty run.json", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), nil, 0o644))
		}, []string{"run.json: empty"}},
		{"missing run.json", func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, "run.json"))) },
			[]string{"run.json: missing"}},
		{"truncated scenario record", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, rec1)) },
			[]string{"scenarios/p2-16-01.json: not valid JSON"}},
		{"missing scenario record", func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, rec1))) },
			[]string{"scenarios/p2-16-01.json: missing: run.json lists scenario p2-16-01 in it"}},
		{"extra record of an unknown scenario", func(t *testing.T, dir string) {
			extra := filepath.Join(dir, ScenarioDir, "p2-16-99.json")
			copyFile(t, filepath.Join(dir, rec1), extra)
			editJSON(t, extra, func(m map[string]any) { m["id"] = "p2-16-99" })
		}, []string{"scenarios/p2-16-99.json: extra: scenario p2-16-99 is not in run.json's run_order"}},
		{"extra record of a listed scenario", func(t *testing.T, dir string) {
			copyFile(t, filepath.Join(dir, rec1), filepath.Join(dir, ScenarioDir, "p2-16-01-2.json"))
		}, []string{"scenarios/p2-16-01-2.json: extra: run.json does not list this record of p2-16-01"}},
		{"a file that is not a record", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, ScenarioDir, "notes.txt"), []byte("x"), 0o644))
		}, []string{"scenarios/notes.txt: extra: not a scenario record"}},
		{"record status rewritten", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, ScenarioDir, "p2-16-02.json"), func(m map[string]any) { m["status"] = StatusPassed })
		}, []string{"scenarios/p2-16-02.json: status passed, run.json says failed for p2-16-02"}},
		{"totals that do not add up", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(m map[string]any) { m["totals"].(map[string]any)["failed"] = 0.0 })
		}, []string{"run.json: totals {total 2, passed 1, failed 0", "do not add up"}},
		{"a row dropped from run.json", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(m map[string]any) { m["scenarios"] = m["scenarios"].([]any)[:1] })
		}, []string{"scenarios/p2-16-02.json: extra: run.json does not list", "run.json: scenario p2-16-02 of run_order has no row"}},
		{"truncated cucumber.json", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "cucumber.json")) },
			[]string{"cucumber.json: not valid JSON"}},
		{"truncated junit.xml", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "junit.xml")) },
			[]string{"junit.xml: not well-formed XML"}},
		{"truncated messages.ndjson", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, MessagesFile)) },
			[]string{"messages.ndjson: line "}},
		{"messages.ndjson cut at a line's end", func(t *testing.T, dir string) {
			file := filepath.Join(dir, MessagesFile)
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
			require.NoError(t, os.WriteFile(file, []byte(strings.Join(lines[:len(lines)-1], "")), 0o644))
		}, []string{"messages.ndjson: ends without testRunFinished (cut short?)"}},
		{"gate.json without a gate run", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, GateFile), []byte(`{"schema_version":1,"verdict":"PASS"}`), 0o644))
		}, []string{"gate.json: extra: run.json names no gate"}},
		{"gate.json missing", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(m map[string]any) {
				m["gate"] = map[string]any{"name": "r2", "verdict": "PASS", "file": GateFile}
			})
		}, []string{"gate.json: missing"}},
		{"a row naming a file outside the records", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(m map[string]any) {
				m["scenarios"].([]any)[0].(map[string]any)["file"] = "../other/scenarios/p2-16-01.json"
			})
		}, []string{`run.json: scenario row 1 (p2-16-01) names "../other/scenarios/p2-16-01.json", not a record in scenarios/`}},
		{"a gate record outside the archive", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(m map[string]any) {
				m["gate"] = map[string]any{"name": "r2", "verdict": "PASS", "file": "../gate.json"}
			})
		}, []string{`run.json: the gate record "../gate.json" is outside the archive`}},
	}
}

func TestCheckIntegrityNamesTheBrokenFile(t *testing.T) {
	cases := brokenArchives()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := finishedArchive(t)
			tc.breakIt(t, dir)
			got := problemsText(CheckIntegrity(dir))
			for _, w := range tc.want {
				assert.Contains(t, got, w)
			}
		})
	}
}

// A run killed mid-way leaves run.json "interrupted", maybe a record written after its last
// update, a half-written temporary file and no reports: all of that is what such an archive
// is, not a break.
func TestCheckIntegrityOfAnInterruptedRun(t *testing.T) {
	a, err := Create(t.TempDir(), "x", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), testRedactor())
	require.NoError(t, err)
	assert.Empty(t, CheckIntegrity(a.Dir()), "the provisional archive Create leaves")

	order := []string{"p2-16-01", "p2-16-02", "p2-16-03"}
	a.SetOrder(order)
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-01", StatusNotRun)))
	assert.Empty(t, problemsText(CheckIntegrity(a.Dir())), "a not-run record before the first run.json update")
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-02", StatusPassed)))
	require.NoError(t, a.UpdateRun(&Run{State: RunInterrupted, RunOrder: order}))
	require.NoError(t, a.WriteScenario(sampleScenario("p2-16-03", StatusFailed)))
	require.NoError(t, os.WriteFile(filepath.Join(a.Dir(), ScenarioDir, TempPrefix+"p2-16-04.json-1"), []byte(`{"id":`), 0o644))
	// p2-16-03 was written after the last update, and the run died before the next.
	editJSON(t, filepath.Join(a.Dir(), "run.json"), func(m map[string]any) {
		rows := m["scenarios"].([]any)
		m["scenarios"] = rows[:2]
		m["totals"] = map[string]any{"total": 2.0, "passed": 1.0, "not_run": 1.0, "duration_ms": 3000.0}
	})
	assert.Empty(t, problemsText(CheckIntegrity(a.Dir())))

	// ... but a record of a scenario outside run_order is extra there too.
	zz := filepath.Join(a.Dir(), ScenarioDir, "zz.json")
	copyFile(t, filepath.Join(a.Dir(), ScenarioDir, "p2-16-03.json"), zz)
	editJSON(t, zz, func(m map[string]any) { m["id"] = "zz" })
	assert.Contains(t, problemsText(CheckIntegrity(a.Dir())), "scenarios/zz.json: extra: scenario zz is not in run.json's run_order")
}
