package ksqlflow

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/emulator"
)

// pkgDir is the package directory; TestMain moves the working directory to a temp dir so
// the local lock files (.ksql/ in the cwd) of in-process runs never land in the repo.
var pkgDir string

func TestMain(m *testing.M) {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	pkgDir = wd
	tmp, err := os.MkdirTemp("", "ksqlflow-test-cwd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := os.Chdir(tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	os.Chdir(wd)
	os.RemoveAll(tmp)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binDir holds the flowsandbox binary built once for the process tests.
var (
	binDir   string
	binPath  string
	binErr   error
	binBuild sync.Once
)

// flowsandboxBin builds ./cmd/flowsandbox once per test binary.
func flowsandboxBin(t *testing.T) string {
	t.Helper()
	binBuild.Do(func() {
		binDir, binErr = os.MkdirTemp("", "ksqlflow-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "flowsandbox")
		if runtime.GOOS == "windows" {
			binPath += ".exe"
		}
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/flowsandbox")
		cmd.Dir = filepath.Join(pkgDir, "..", "..", "..")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build flowsandbox: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

func fixturePath(name string) string {
	return filepath.Join(pkgDir, "..", "..", "..", "features", "fixtures", "jobs", name)
}

// Token variable names the test config refers to.
const (
	envCustomers = "KSQLFLOW_TEST_CUSTOMERS_TOKEN"
	envDeals     = "KSQLFLOW_TEST_DEALS_TOKEN"
	envLog       = "KSQLFLOW_TEST_LOG_TOKEN"
	testProfile  = "sandbox"
)

// emu is one emulator with a kSQL-Flow config pointing at it.
type emu struct {
	srv     *emulator.Server
	apps    map[string]emulator.AppInfo // by role
	cfgPath string
	dir     string
	env     map[string]string // token variables (set in-process; passed to children)
	admin   *kintoneapi.Client
}

// startEmu starts the in-process emulator with the given per-role latency and writes the
// config the runner would write from Apps(). baseURL overrides the emulator URL (proxy).
func startEmu(t testing.TB, latency map[string]time.Duration) *emu {
	t.Helper()
	srv, err := emulator.Start(context.Background(), emulator.Options{Latency: latency})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	e := &emu{srv: srv, apps: map[string]emulator.AppInfo{}, dir: t.TempDir()}
	for _, a := range srv.Apps() {
		e.apps[a.Role] = a
	}
	e.env = map[string]string{
		envCustomers: e.apps["customers"].Tokens["read"],
		envDeals:     e.apps["deals"].Tokens["read"],
		envLog:       e.apps["log"].Tokens["ksqlflow"],
	}
	for k, v := range e.env {
		require.NotEmpty(t, v, k)
		t.Setenv(k, v)
	}
	e.cfgPath = e.writeConfig(t, srv.BaseURL())
	hc, err := kintoneapi.HTTPClientWithCA(srv.CAFile())
	require.NoError(t, err)
	e.admin = kintoneapi.New(srv.BaseURL(), hc, map[string]string{e.apps["log"].ID: e.apps["log"].Tokens["full"]})
	return e
}

func (e *emu) writeConfig(t testing.TB, baseURL string) string {
	t.Helper()
	// The real kSQL-Flow's format; the emulator's CA reaches the client through SSL_CERT_FILE.
	t.Setenv("SSL_CERT_FILE", e.srv.CAFile())
	cfg := map[string]any{"profiles": map[string]any{testProfile: map[string]any{
		"baseUrl":  baseURL + "/",
		"timezone": "Asia/Tokyo",
		"apps": map[string]any{
			"顧客管理":              appEntry(t, e.apps["customers"].ID, envCustomers),
			"案件管理":              appEntry(t, e.apps["deals"].ID, envDeals),
			"KSQL_FLOW_JOB_LOG": appEntry(t, e.apps["log"].ID, envLog),
		},
		"logApp": "KSQL_FLOW_JOB_LOG",
		"limits": map[string]any{"batchTimeoutSec": 120},
		"retry":  map[string]any{"maxAttempts": 1, "initialDelayMs": 0, "maxDelayMs": 0},
	}}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "ksql-flow.json")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// appEntry is one apps entry of the real format: integer id, token references.
func appEntry(t testing.TB, id, tokenVar string) map[string]any {
	n, err := strconv.ParseInt(id, 10, 64)
	require.NoError(t, err)
	return map[string]any{"id": n, "tokens": []string{"env:" + tokenVar}}
}

// logRecords returns every JOB log record, oldest first.
func (e *emu) logRecords(t *testing.T) []kintoneapi.Record {
	t.Helper()
	recs, err := e.admin.GetAll(context.Background(), e.apps["log"].ID, "", nil)
	require.NoError(t, err)
	return recs
}

// invoke runs Main in-process.
func invoke(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// orchestratorArgs is a full orchestrator-mode run of file with a fresh result path.
func (e *emu) orchestratorArgs(t *testing.T, file, jobID, attempt string) (args []string, resultPath string) {
	resultPath = filepath.Join(t.TempDir(), "metadata", attempt+".json")
	return []string{"run", "-f", file, "--profile", testProfile, "--config", e.cfgPath,
		"--as-of", "2026-08-15T00:00:00.000Z", "--result-json", resultPath,
		"--correlation-id", "netrun_test-1", "--attempt-id", attempt, "--expected-job-id", jobID}, resultPath
}

func readResult(t *testing.T, path string) (*ExecutionResult, map[string]any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r ExecutionResult
	require.NoError(t, json.Unmarshal(b, &r))
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return &r, m
}
