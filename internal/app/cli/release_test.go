package cli

// The release gate end to end on the sandbox: a temporary git repository stands in
// for the SUT; an accepting run on the correct sandbox is the earlier evidence; the gate run
// uses a planted defect so that its required scenario fails while the M5 series is carried
// over by a diff rule. Then the before/after evidence of the "fix" and a sealed pack.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/app/gate/gatetest"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/pack/packtest"
)

func TestReleaseGateOnSandbox(t *testing.T) {
	t.Parallel() // a long end-to-end run that mostly waits: the others of its kind run beside it
	if testing.Short() {
		t.Skip("acceptance run skipped in -short mode")
	}
	// The planted defect: run-network names a resumed Invocation "NEW: ", which
	// m6-01-resume-identity must catch.
	broken := t.TempDir()
	build := exec.Command("go", "build", "-tags", "defect_resume_prints_new", "-o", filepath.Join(broken, "flowsandbox"+exe()), "./cmd/flowsandbox")
	build.Dir = repoRoot()
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	correct := filepath.Join(binDir, "flowsandbox"+exe())

	repo, c0, c1 := gatetest.TwoCommitRepo(t, "docs/notes.md") // c1 changes only docs/
	results := t.TempDir()
	lock := t.TempDir()

	// The last accepting run: M5 and m6-01 pass on the correct sandbox at c0.
	acc := flowtest(t, nil, "run", "--product", "reference", "--tags", "@m5 or @m6-01-resume-identity", "--sut-commit", c0,
		"--sandbox-bin", correct, "--out", results, "--lock-dir", lock)
	require.Equal(t, 0, acc.code, acc.stdout+acc.stderr)
	accepting := archiveDir(t, acc.stdout)

	gateFile := filepath.Join(t.TempDir(), "demo.yaml")
	require.NoError(t, os.WriteFile(gateFile, []byte(`schema_version: 1
name: demo
title: "m6-01 required; M5 carried over unless src/io changed"
required: "@m6-01-resume-identity"
required_count: 1
carry_over:
  - series: m5
    paths: [src/io/]
    justification: "M5 drives the scheduler only; nothing under src/io changed"
`), 0o644))
	g := flowtest(t, nil, "gate", "run", gateFile, "--sut-commit", c1, "--sut-repo", repo, "--since-archive", accepting, "--durations-from", accepting,
		"--product", "reference", "--sandbox-bin", filepath.Join(broken, "flowsandbox"+exe()), "--out", results, "--lock-dir", lock)
	require.Equal(t, exitGateFail, g.code, g.stdout+g.stderr)
	assert.Contains(t, g.stdout, "gate demo: FAIL")
	assert.Contains(t, g.stdout, "ETA from the durations of "+accepting, "the progress line of a gate run")
	assert.Regexp(t, `PROGRESS 1/1 done, 0 passed, 1 failed; elapsed \S+, ETA 0s`, g.stdout)
	gateDir := archiveDir(t, g.stdout)
	assert.Contains(t, filepath.Base(gateDir), "gate-demo")

	var rec struct {
		Verdict   string
		Scenarios []struct {
			ID, Status  string
			Required    bool
			CarriedOver *struct {
				Archive, Commit, Record, SHA256 string
				DiffStat                        string `json:"diff_stat"`
			} `json:"carried_over"`
		}
		CarryOver []struct {
			Series string
			Holds  bool
			Diffs  []struct{ Stat string }
		} `json:"carry_over"`
	}
	data, err := os.ReadFile(filepath.Join(gateDir, "gate.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rec))
	assert.Equal(t, "FAIL", rec.Verdict)
	status := map[string]string{}
	for _, s := range rec.Scenarios {
		status[s.ID] = s.Status
		if s.Status == "carried-over" {
			require.NotNil(t, s.CarriedOver, s.ID)
			assert.Equal(t, accepting, s.CarriedOver.Archive)
			assert.Equal(t, c0, s.CarriedOver.Commit)
			assert.Contains(t, s.CarriedOver.DiffStat, "docs/notes.md", "the diff stat that justified it")
			sum, err := (fileSum{}).of(filepath.Join(s.CarriedOver.Archive, s.CarriedOver.Record))
			require.NoError(t, err)
			assert.Equal(t, sum, s.CarriedOver.SHA256)
		}
	}
	assert.Equal(t, map[string]string{"m6-01-resume-identity": "failed", "m5-serial-success": "carried-over", "m5-mid-failure": "carried-over",
		"m5-resume": "carried-over", "m5-lock-conflict": "carried-over", "m5-kill-unknown": "carried-over"}, status)
	require.Len(t, rec.CarryOver, 1)
	assert.True(t, rec.CarryOver[0].Holds)
	readme, err := os.ReadFile(filepath.Join(gateDir, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "## Release gate demo: **FAIL**")
	assert.Contains(t, string(readme), "| m6-01-resume-identity | yes | **failed** |")
	assert.Contains(t, string(readme), "docs/notes.md | 2 +-")
	page, err := os.ReadFile(filepath.Join(gateDir, "index.html"))
	require.NoError(t, err)
	assert.Contains(t, string(page), "Release gate demo: FAIL")
	assert.Contains(t, string(page), "<svg")

	// The evidence of the "fix": before = the defect (m6-01 failed), after = the correct
	// sandbox (passed). The row is pass; M5, which ran only after, has no failing baseline.
	ev := flowtest(t, nil, "evidence", "--before", gateDir, "--after", accepting, "--json")
	var ba struct {
		Rows []struct {
			Scenario, Status string
			Before, After    struct {
				Revision, Outcome, Observed, Record string
				ExitCode                            string `json:"exit_code"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(ev.stdout), &ba), ev.stdout+ev.stderr)
	for _, d := range []string{accepting, gateDir} {
		requireSchemaValid(t, d)
	}
	requireEvidenceValid(t, []byte(ev.stdout))
	rows := map[string]string{}
	for _, r := range ba.Rows {
		rows[r.Scenario] = r.Status
		if r.Scenario == "m6-01-resume-identity" {
			assert.Equal(t, c1, r.Before.Revision)
			assert.Equal(t, c0, r.After.Revision)
			assert.Equal(t, "1", r.Before.ExitCode)
			assert.Equal(t, "0", r.After.ExitCode)
			assert.Contains(t, r.Before.Observed, `has a line starting with "RESUME: "`)
			assert.FileExists(t, r.Before.Record)
		}
	}
	assert.Equal(t, "pass", rows["m6-01-resume-identity"], "failed before, passed after")
	assert.Equal(t, "not run", rows["m5-resume"], "no failing run before the fix")
	assert.Equal(t, 1, ev.code, "not every row is pass")
	md := flowtest(t, nil, "evidence", "--before", gateDir, "--after", accepting)
	assert.Contains(t, md.stdout, "| Criterion / test | Before | After | Status | Limits |")

	// Sealed: the pack verifies; one changed byte inside it is found and the file named.
	p := flowtest(t, nil, "archive", "pack", gateDir)
	require.Equal(t, 0, p.code, p.stdout+p.stderr)
	pack := gateDir + ".tar.gz"
	assert.Contains(t, p.stdout, pack)
	v := flowtest(t, nil, "archive", "verify", pack)
	assert.Equal(t, 0, v.code, v.stdout+v.stderr)

	tampered := filepath.Join(t.TempDir(), "tampered.tar.gz")
	flipByteInPack(t, pack, tampered, "/gate.json", []byte(`"FAIL"`), 'P')
	v = flowtest(t, nil, "archive", "verify", tampered)
	assert.Equal(t, 1, v.code, v.stdout+v.stderr)
	assert.Contains(t, v.stdout, "manifest: gate.json: changed")
}

type fileSum struct{}

func (fileSum) of(p string) (string, error) { return results.FileSHA256(p) }

// flipByteInPack copies a pack, changing one byte (the first of what) of the entry whose name
// ends in suffix to b; the manifest is left as it was.
func flipByteInPack(t *testing.T, src, dst, suffix string, what []byte, b byte) {
	t.Helper()
	changed := false
	packtest.Rewrite(t, src, dst, func(name string, data []byte) []byte {
		if strings.HasSuffix(name, suffix) {
			i := bytes.Index(data, what)
			require.GreaterOrEqual(t, i, 0)
			data[i+1] = b
			changed = true
		}
		return data
	}, nil)
	require.True(t, changed, "no entry ends in %s", suffix)
}
