package rehearse

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/app/buildtest"
	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/harness/proc"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// binDir holds flowsandbox (the stand-alone tenants) and flowtest (the live check of the
// operator env they write), built once.
var binDir string

func TestMain(m *testing.M) { os.Exit(buildtest.RunWith(m.Run, &binDir, "flowtest", "flowsandbox")) }

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// startRehearsalTenant starts `flowsandbox kintone serve --operator-env` as the rehearsal
// does and returns the tenant once its operator env is written.
func startRehearsalTenant(t *testing.T, latency time.Duration) *tenant {
	t.Helper()
	tn := &tenant{i: 1, n: 1, name: "test 1/1", work: t.TempDir()}
	tn.opDir = filepath.Join(tn.work, "operator")
	t.Cleanup(func() {
		if tn.emu != nil {
			_, err := tn.emu.Stop(10 * time.Second)
			assert.NoError(t, err)
		}
	})
	require.NoError(t, tn.startTenant(context.Background(), filepath.Join(binDir, "flowsandbox"+buildtest.Exe()), latency))
	return tn
}

// The operator env the emulator writes is one flowtest accepts in live mode: every name is a
// variable flowtest reads, writable tokens only in tokens.sh, every token role covered, and
// `flowtest check --target live` run in that directory (as the operator would, after
// `. ./tokens.sh`) passes every check, the token-permission probes included.
func TestRehearsalOperatorEnvPassesLiveCheck(t *testing.T) {
	tn := startRehearsalTenant(t, 0)
	dot, found, err := config.ReadDotEnv(filepath.Join(tn.opDir, ".env"), true)
	require.NoError(t, err)
	require.True(t, found)
	exports, err := ParseExports(filepath.Join(tn.opDir, "tokens.sh"))
	require.NoError(t, err)

	known := map[string]bool{}
	for _, v := range config.Variables() {
		known[v.Name] = true
	}
	set := map[string]bool{}
	for name := range dot {
		assert.True(t, known[name], ".env sets %s, which flowtest does not read", name)
		assert.False(t, safety.IsWritableToken(name), ".env holds the writable token %s", name)
		set[name] = true
	}
	for _, kv := range exports {
		name, _, _ := strings.Cut(kv, "=")
		assert.True(t, known[name], "tokens.sh exports %s, which flowtest does not read", name)
		assert.True(t, safety.IsWritableToken(name), "tokens.sh exports %s, which is not a writable token", name)
		set[name] = true
	}
	for _, tok := range safety.TokenCatalog() {
		assert.True(t, set[tok.Name], "the operator env sets no %s", tok.Name)
	}
	for _, a := range safety.AppCatalog() {
		assert.True(t, set[a.Name], "the operator env sets no %s", a.Name)
	}

	root, err := buildtest.Root()
	require.NoError(t, err)
	features := filepath.Join(root, "features")
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(binDir, "flowtest"+buildtest.Exe()), "check", "--target", "live", "--features", features,
		"--tags", "@m5 or @p2-16 or @csv1", "--confirmed-by", "rehearsal")
	cmd.Dir = tn.opDir
	cmd.Env = append(proc.PlatformEnv(), exports...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	require.NoError(t, err, out.String())
	for _, c := range []string{"token-permissions", "tenant-tls", "flownet-launcher", "ksql-flow-launcher", "ksql-flow-config", "csv-io-dir", "pending-requests"} {
		assert.Regexp(t, `PASS  `+c+`\s`, out.String())
	}
	assert.NotContains(t, out.String(), "FAIL  ")
	for _, kv := range exports {
		_, v, _ := strings.Cut(kv, "=")
		assert.NotContains(t, out.String(), v, "the console shows no writable token")
	}
}

func TestParseExports(t *testing.T) {
	ok := writeFile(t, "tokens.sh", "# comment\n\nexport A_TOKEN='x y$z'\nexport B=plain\n")
	env, err := ParseExports(ok)
	require.NoError(t, err)
	assert.Equal(t, []string{"A_TOKEN=x y$z", "B=plain"}, env)

	for name, content := range map[string]string{
		"no export":  "A=1\n",
		"command":    "export A=1; rm -rf /\n",
		"expansion":  "export A=$HOME\n",
		"open quote": "export A='1\n",
		"empty":      "# nothing\n",
	} {
		_, err := ParseExports(writeFile(t, "tokens.sh", content))
		assert.Error(t, err, name)
	}
	_, err = ParseExports(writeFile(t, "tokens.sh", "export A=1\nexport A=1; echo\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tokens.sh:2:")
}

// writeRun writes a tenant archive (run.json only) under out with the given scenario summaries.
func writeRun(t *testing.T, out, state string, scen ...results.ScenarioSummary) {
	t.Helper()
	dir := filepath.Join(out, "2026-12-01", "101500-all")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "scenarios"), 0o755))
	data, err := json.Marshal(results.Run{SchemaVersion: 1, Target: "live", State: state, Scenarios: scen})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), data, 0o644))
}

// What a tenant's archive comes to: failures, blocked and not-run scenarios (other than
// another shard's or this platform's) are problems; passed and filtered ones are not.
func TestRehearsalOutcomeOfAnArchive(t *testing.T) {
	sum := func(id, status, reason, cat string) results.ScenarioSummary {
		return results.ScenarioSummary{ID: id, Status: status, Reason: reason, NotRunCategory: cat}
	}
	clean := &tenant{i: 1, n: 2, name: "fast 1/2", outDir: t.TempDir()}
	writeRun(t, clean.outDir, results.RunComplete,
		sum("a", results.StatusPassed, "", ""),
		sum("b", results.StatusNotRun, "in another shard: 2/2", results.NotRunTag),
		sum("c", results.StatusNotRun, "filtered by tag expression", results.NotRunTag),
		sum("w", results.StatusNotRun, "needs windows (this is linux)", results.NotRunPlatform))
	o := clean.outcome()
	assert.Empty(t, o.Problems)
	assert.Equal(t, 1, o.Passed)
	assert.Equal(t, "1/2", o.Shard)
	assert.Equal(t, []string{"w: needs windows (this is linux)"}, o.Allowed)
	assert.Equal(t, Clean, o.Result())

	bad := &tenant{i: 2, n: 2, name: "fast 2/2", outDir: t.TempDir(), result: proc.Result{ExitCode: 1}}
	writeRun(t, bad.outDir, results.RunComplete,
		sum("a", results.StatusPassed, "", ""),
		sum("f", results.StatusFailed, "step X failed: expected 1, saw 2", ""),
		sum("k", "blocked", "cli-kintone unavailable", ""),
		sum("n", results.StatusNotRun, "not implemented: no feature file", results.NotRunNotImplemented))
	o = bad.outcome()
	assert.Equal(t, 1, o.Passed)
	assert.Equal(t, 2, o.Failed)
	assert.Equal(t, 1, o.NotRun)
	require.Len(t, o.Problems, 3)
	assert.Contains(t, o.Problems[0], "f failed: step X failed")
	assert.Contains(t, o.Problems[1], "k blocked")
	assert.Contains(t, o.Problems[2], "n not run: not implemented")
	assert.Equal(t, Failed, o.Result())

	refused := &tenant{i: 1, n: 1, name: "slow", outDir: t.TempDir(), result: proc.Result{ExitCode: 2}}
	o = refused.outcome()
	require.Len(t, o.Problems, 1)
	assert.Contains(t, o.Problems[0], "left 0 archives")
	assert.Equal(t, Refused, o.Result())

	nothing := &tenant{i: 1, n: 1, name: "w", outDir: t.TempDir(), result: proc.Result{ExitCode: 3}}
	writeRun(t, nothing.outDir, results.RunComplete, sum("w", results.StatusNotRun, "needs windows (this is linux)", results.NotRunPlatform))
	o = nothing.outcome()
	assert.Equal(t, NothingRan, o.Result())

	leak := &tenant{i: 1, n: 1, name: "l", outDir: t.TempDir(), result: proc.Result{ExitCode: 1}}
	writeRun(t, leak.outDir, results.RunComplete, sum("a", results.StatusPassed, "", ""))
	assert.NotEmpty(t, leak.outcome().Problems, "a run that exits 1 with every scenario passed (a leak) is not clean")

	cut := &tenant{i: 1, n: 1, name: "i", outDir: t.TempDir(), result: proc.Result{ExitCode: 130}}
	writeRun(t, cut.outDir, results.RunInterrupted, sum("a", results.StatusPassed, "", ""),
		sum("b", results.StatusNotRun, "interrupted before it started", results.NotRunInterrupted))
	o = cut.outcome()
	assert.Len(t, o.Problems, 2)

	// The emulator warned that an app went over its day: the rehearsal fails on it.
	busy := &tenant{i: 1, n: 1, name: "b", outDir: t.TempDir(), emuStderr: filepath.Join(t.TempDir(), "stderr.log")}
	writeRun(t, busy.outDir, results.RunComplete, sum("a", results.StatusPassed, "", ""))
	require.NoError(t, os.WriteFile(busy.emuStderr, []byte("flowsandbox kintone: listening\nflowsandbox kintone: daily request limit of app 4 (state) exceeded: request 10001 of a limit of 10000 on 2026-12-02; kintone sends the administrator a warning e-mail and keeps serving, so does the emulator\n"), 0o600))
	o = busy.outcome()
	require.Len(t, o.Problems, 1)
	assert.Contains(t, o.Problems[0], "the tenant's daily request limit was exceeded: flowsandbox kintone: daily request limit of app 4 (state) exceeded")
	assert.Equal(t, Failed, o.Result())
	require.NoError(t, os.WriteFile(busy.emuStderr, []byte("flowsandbox kintone: listening\n"), 0o600))
	assert.Empty(t, busy.outcome().Problems)

	assert.Equal(t, Refused, (&Report{Tenants: []Outcome{clean.outcome(), bad.outcome(), refused.outcome()}}).Result())
	assert.Equal(t, Failed, (&Report{Tenants: []Outcome{nothing.outcome(), bad.outcome()}}).Result())
	assert.Equal(t, NothingRan, (&Report{Tenants: []Outcome{clean.outcome(), nothing.outcome()}}).Result())
	assert.Equal(t, Clean, (&Report{Tenants: []Outcome{clean.outcome()}}).Result())
}
