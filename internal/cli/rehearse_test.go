package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/harness/config"
	"github.com/ksqlflow/flowtest/harness/proc"
	"github.com/ksqlflow/flowtest/harness/wait"
	"github.com/ksqlflow/flowtest/results"
	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/safety"
)

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
	require.NoError(t, tn.startTenant(context.Background(), filepath.Join(binDir, "flowsandbox"+exe()), latency))
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
	exports, err := parseExports(filepath.Join(tn.opDir, "tokens.sh"))
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

	features, err := filepath.Abs(filepath.Join(repoRoot(), "features"))
	require.NoError(t, err)
	cmd := exec.Command(filepath.Join(binDir, "flowtest"+exe()), "check", "--target", "live", "--features", features,
		"--tags", "@m5 or @p2-16 or @csv1", "--confirmed-by", "rehearsal", "--lock-dir", t.TempDir())
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
	env, err := parseExports(ok)
	require.NoError(t, err)
	assert.Equal(t, []string{"A_TOKEN=x y$z", "B=plain"}, env)

	for name, content := range map[string]string{
		"no export":  "A=1\n",
		"command":    "export A=1; rm -rf /\n",
		"expansion":  "export A=$HOME\n",
		"open quote": "export A='1\n",
		"empty":      "# nothing\n",
	} {
		_, err := parseExports(writeFile(t, "tokens.sh", content))
		assert.Error(t, err, name)
	}
	_, err = parseExports(writeFile(t, "tokens.sh", "export A=1\nexport A=1; echo\n"))
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
	assert.Equal(t, runner.ExitPassed, o.code())

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
	assert.Equal(t, runner.ExitFailed, o.code())

	refused := &tenant{i: 1, n: 1, name: "slow", outDir: t.TempDir(), result: proc.Result{ExitCode: 2}}
	o = refused.outcome()
	require.Len(t, o.Problems, 1)
	assert.Contains(t, o.Problems[0], "left 0 archives")
	assert.Equal(t, runner.ExitRefused, o.code())

	nothing := &tenant{i: 1, n: 1, name: "w", outDir: t.TempDir(), result: proc.Result{ExitCode: 3}}
	writeRun(t, nothing.outDir, results.RunComplete, sum("w", results.StatusNotRun, "needs windows (this is linux)", results.NotRunPlatform))
	o = nothing.outcome()
	assert.Equal(t, runner.ExitNothingRan, o.code())

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
	assert.Equal(t, runner.ExitFailed, o.code())
	require.NoError(t, os.WriteFile(busy.emuStderr, []byte("flowsandbox kintone: listening\n"), 0o600))
	assert.Empty(t, busy.outcome().Problems)

	assert.Equal(t, runner.ExitRefused, rehearsalCode([]tenantOutcome{clean.outcome(), bad.outcome(), refused.outcome()}))
	assert.Equal(t, runner.ExitFailed, rehearsalCode([]tenantOutcome{nothing.outcome(), bad.outcome()}))
	assert.Equal(t, runner.ExitNothingRan, rehearsalCode([]tenantOutcome{clean.outcome(), nothing.outcome()}))
	assert.Equal(t, runner.ExitPassed, rehearsalCode([]tenantOutcome{clean.outcome()}))
}

func TestRehearseRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--latency", "-1s"}, "--latency"},
		{[]string{"--shards", "0"}, "--shards"},
		{[]string{"--tags", "@m5 and"}, "--tags"},
		{[]string{"--tags", "@m55"}, "@m55"},
		{[]string{"--features", "/nonexistent"}, "--features"},
		{[]string{"--confirmed-by", " "}, "--confirmed-by"},
		{[]string{"--step-timeout", "0s"}, "--step-timeout"},
		{[]string{"--timeout-scale", "-2"}, "--timeout-scale"},
		{[]string{"--shards", "2", "--shards", "3"}, "given 2 times"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		r := flowtest(t, nil, append([]string{"rehearse", "--out", t.TempDir()}, c.args...)...)
		assert.Equal(t, runner.ExitRefused, r.code, "%v: %s", c.args, r.stdout+r.stderr)
		assert.Contains(t, r.stderr, c.want, c.args)
	}
}

// The rehearsal end to end on two tenants: each runs its shard through `run --target live`
// and both pass; the report and rehearsal.json name both archives, which are live runs of
// the right shard; the tenants are stopped afterwards.
func TestRehearseRunsTheLivePath(t *testing.T) {
	if testing.Short() {
		t.Skip("acceptance run skipped in -short mode")
	}
	out := t.TempDir()
	r := flowtest(t, nil, "rehearse", "--shards", "2", "--out", out,
		"--tags", "@m5-serial-success or @m5-mid-failure or @m6-01-resume-identity")
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "rehearsal PASS: 3 passed, 0 failed, 0 not run on 2 tenant(s)")
	assert.Contains(t, r.stdout, "[fast 1/2] START ")
	assert.Contains(t, r.stdout, "[fast 2/2] START ")

	files, err := filepath.Glob(filepath.Join(out, "*", "*", "rehearsal.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var rep rehearsal
	require.NoError(t, json.Unmarshal(data, &rep))
	assert.Equal(t, "PASS", rep.Verdict)
	require.Len(t, rep.Tenants, 2)
	for i, o := range rep.Tenants {
		_, run, err := results.ReadArchive(o.Archive)
		require.NoError(t, err)
		assert.Equal(t, "live", run.Target)
		assert.Equal(t, o.Shard, run.Environment["shard"])
		assert.Contains(t, r.stdout, o.Archive)
		assert.Contains(t, run.Command, "--confirmed-by", "tenant %d ran the operator's command line", i+1)
	}
	assert.Equal(t, 3, rep.Tenants[0].Passed+rep.Tenants[1].Passed)
	noneLeft(t)
}

// noneLeft waits for every process started from the test's binaries to be gone.
func noneLeft(t *testing.T) {
	t.Helper()
	assert.NoError(t, binariesGone("the rehearsal's processes to be gone", 10*time.Second, 100*time.Millisecond))
}

// binariesGone waits, polling every poll for at most limit, until no process started from the
// test's binaries is alive but those of except (e.g. a tenant the test still needs).
func binariesGone(what string, limit, poll time.Duration, except ...int32) error {
	return wait.Until(context.Background(), what, limit, poll,
		func(ctx context.Context) (bool, string, error) {
			pids, err := proc.FindByArgv(ctx, proc.ArgvContains(binDir))
			if err != nil {
				return false, "", err
			}
			pids = slices.DeleteFunc(pids, func(p int32) bool { return slices.Contains(except, p) })
			return len(pids) == 0, fmt.Sprintf("%d alive: %v", len(pids), pids), nil
		})
}

// syncBuffer is a bytes.Buffer a child's output and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ctrl-C during a rehearsal: the live run is interrupted (its archive says so), the tenant
// is stopped, nothing is left running, exit 130.
func TestRehearseInterrupted(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("acceptance run; os.Interrupt cannot be sent on Windows")
	}
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "flowtest"+exe()), "rehearse", "--out", out, "--tags", "@m6-05-status-readonly")
	cmd.Dir = repoRoot()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	require.NoError(t, wait.Until(context.Background(), "the live run to start its scenario", 60*time.Second, 50*time.Millisecond,
		func(context.Context) (bool, string, error) {
			return strings.Contains(buf.String(), "] START m6-05-status-readonly"), "", nil
		}))
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, buf.String())
	assert.Equal(t, runner.ExitInterrupted, ee.ExitCode(), buf.String())
	assert.Contains(t, buf.String(), "rehearsal INTERRUPTED")
	runs, err := filepath.Glob(filepath.Join(out, "*", "*", "tenant-1", "*", "*", "run.json"))
	require.NoError(t, err)
	require.Len(t, runs, 1, buf.String())
	_, run, err := results.ReadArchive(filepath.Dir(runs[0]))
	require.NoError(t, err)
	assert.Equal(t, results.RunInterrupted, run.State)
	noneLeft(t)
}
