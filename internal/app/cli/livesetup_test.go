package cli

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// liveSetup is an operator's live setup against a stand-in tenant (the kintone emulator,
// least-privilege tokens: FlowNet's writers without delete, separate cleanup tokens) with the
// reference CLIs as launchers; each case breaks one part.
type liveSetup struct {
	sb       string // the flowsandbox binary: the reference launchers
	baseURL  string
	caFile   string
	apps     map[string]target.App
	features string
	env      map[string]string
}

func newLiveSetup(t *testing.T) *liveSetup {
	t.Helper()
	// The emulator as a stand-alone tenant, started as the runner starts it: a child process.
	sb := filepath.Join(binDir, "flowsandbox"+exe())
	tenant, err := target.StartSandbox(context.Background(), target.SandboxOptions{Bin: sb, WorkDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { tenant.Close() })
	apps := tenant.Apps
	s := &liveSetup{sb: sb, baseURL: tenant.BaseURL, caFile: tenant.CAFile, apps: apps,
		features: featuresDir(t, "schema_version: 1\nscenarios:\n  - {id: r, series: s}\n",
			map[string]string{"x/r.feature": "Feature: r\n  @r @s\n  Scenario: r\n    Then exactly one run exists for the business key\n"}),
		env: map[string]string{
			"KSQL_SPIKE_BASE_URL": tenant.BaseURL, "FLOWTEST_CA_FILE": tenant.CAFile,
			"KSQL_SPIKE_APP_EXEC": apps["state"].ID, "KSQL_SPIKE_APP_AUDIT": apps["audit"].ID, "KSQL_E2E_LOG_APP_ID": apps["log"].ID,
			"FLOWTEST_APP_CUSTOMERS": apps["customers"].ID, "FLOWTEST_APP_DEALS": apps["deals"].ID,
			"KSQL_SPIKE_TOKEN_EXEC": apps["state"].Tokens["flownet"], "KSQL_SPIKE_TOKEN_EXEC_CLEANUP": apps["state"].Tokens["full"],
			"KSQL_SPIKE_TOKEN_EXEC_RO": apps["state"].Tokens["read"],
			"KSQL_SPIKE_TOKEN_AUDIT":   apps["audit"].Tokens["flownet"], "KSQL_SPIKE_TOKEN_AUDIT_CLEANUP": apps["audit"].Tokens["full"],
			"KSQL_SPIKE_TOKEN_AUDIT_RO": apps["audit"].Tokens["read"],
			"KSQL_E2E_TOKEN_LOGS":       apps["log"].Tokens["ksqlflow"], "KSQL_E2E_TOKEN_LOGS_RO": apps["log"].Tokens["read"],
			"KSQL_TOKEN_CUSTOMERS": apps["customers"].Tokens["read"], "KSQL_TOKEN_DEALS": apps["deals"].Tokens["read"],
			// the request app: the poller's view/edit token, the harness's own, a view-only one
			"KSQL_E2E_REQUEST_APP_ID": apps["request"].ID, "KSQL_E2E_TOKEN_REQUESTS": apps["request"].Tokens["poller"],
			"KSQL_E2E_TOKEN_REQUESTS_CLEANUP": apps["request"].Tokens["full"], "KSQL_E2E_TOKEN_REQUESTS_RO": apps["request"].Tokens["read"],
			"FLOWTEST_FLOWNET_BIN": sb, "FLOWTEST_FLOWNET_BIN_ARGS": "flownet",
			"KSQL_FLOW_BIN": sb, "KSQL_FLOW_BIN_ARGS": "ksql-flow",
		},
	}
	s.env["KSQL_FLOW_CONFIG"] = s.writeConfig(t, "KSQL_TOKEN_CUSTOMERS")
	return s
}

// writeConfig writes an operator's kSQL-Flow config for the stand-in tenant whose customers
// token is referenced as env:<customersVar>.
func (s *liveSetup) writeConfig(t *testing.T, customersVar string) string {
	t.Helper()
	// The real kSQL-Flow 0.9.0 format; the CA reaches kSQL-Flow through FLOWTEST_CA_FILE.
	cfg := `{"profiles": {"e2e": {
  "baseUrl": "` + s.baseURL + `/", "timezone": "Asia/Tokyo",
  "apps": {"顧客管理": {"id": ` + s.apps["customers"].ID + `, "tokens": ["env:` + customersVar + `"]},
           "案件管理": {"id": ` + s.apps["deals"].ID + `, "tokens": ["env:KSQL_TOKEN_DEALS"]},
           "JOB_LOG": {"id": ` + s.apps["log"].ID + `, "tokens": ["env:KSQL_E2E_TOKEN_LOGS"]}},
  "logApp": "JOB_LOG"}}}`
	return writeFile(t, "ksql-flow-config.json", cfg)
}

func (s *liveSetup) check(t *testing.T, change map[string]string) result {
	t.Helper()
	var env []string
	for k, v := range s.env {
		if nv, ok := change[k]; ok {
			v = nv
		}
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	return flowtest(t, env, "check", "--target", "live", "--features", s.features)
}

// The live preflight proves the setup read-only: a complete setup passes; a missing CA,
// launcher or config, or a config referencing a variable flowtest does not pass to kSQL-Flow,
// is refused by check, naming what is wrong.
func TestLiveSetupPreflight(t *testing.T) {
	s := newLiveSetup(t)
	ok := s.check(t, nil)
	require.Equal(t, 0, ok.code, ok.stdout+ok.stderr)
	for _, name := range []string{"tenant-tls", "token-permissions", "tenant-activity", "flownet-launcher", "ksql-flow-launcher",
		"flownet-validate", "ksql-flow-validate", "ksql-flow-config", "ksql-flow-proxy"} {
		assert.Contains(t, ok.stdout, "PASS  "+name)
	}
	// The proxy probe: the copy was described alike and the probe job's first read was held.
	assert.Contains(t, ok.stdout, "was held and released, the job ended 0")
	// The console goes through the archive's redactor: no real app id, no token.
	for role, a := range s.apps {
		if role == "state" || role == "audit" || role == "log" || role == "customers" || role == "deals" {
			assert.NotContains(t, ok.stdout, "app "+a.ID, "the %s app id is redacted on the console", role)
		}
	}
	assert.NotContains(t, ok.stdout, s.env["KSQL_SPIKE_TOKEN_EXEC"])
	// Nothing was written: the apps flowtest and the product write are still empty.
	hc, err := kintoneapi.HTTPClientWithCA(s.caFile)
	require.NoError(t, err)
	for _, role := range []string{"state", "audit", "log", "request"} {
		a := s.apps[role]
		n, err := kintoneapi.New(s.baseURL, hc, map[string]string{a.ID: a.Tokens["read"]}).Count(context.Background(), a.ID, "")
		require.NoError(t, err)
		assert.Zero(t, n, "records in the %s app after check", role)
	}

	cases := []struct {
		name   string
		change map[string]string
		want   []string
	}{
		{"no CA for the tenant's certificate", map[string]string{"FLOWTEST_CA_FILE": ""}, []string{"FAIL  tenant-tls", "x509"}},
		{"CA file missing", map[string]string{"FLOWTEST_CA_FILE": filepath.Join(t.TempDir(), "missing.pem")}, []string{"FAIL  tenant-tls", "missing.pem"}},
		// token roles: each token is probed, writing nothing, for what its role needs
		{"FlowNet writer without cleanup token lacks delete", map[string]string{"KSQL_SPIKE_TOKEN_EXEC_CLEANUP": ""}, []string{"FAIL  token-permissions", "KSQL_SPIKE_TOKEN_EXEC (FlowNet's state writer and the harness's sweep: KSQL_SPIKE_TOKEN_EXEC_CLEANUP is unset) lacks the delete permission"}},
		// the request app: the poller needs view/edit; the harness's token view/add/edit/delete
		{"poller token without request cleanup token lacks add", map[string]string{"KSQL_E2E_TOKEN_REQUESTS_CLEANUP": ""}, []string{"FAIL  token-permissions", "KSQL_E2E_TOKEN_REQUESTS (FlowNet's request poller and the harness's requests and sweep: KSQL_E2E_TOKEN_REQUESTS_CLEANUP is unset) lacks the add permission"}},
		{"poller token cannot edit", map[string]string{"KSQL_E2E_TOKEN_REQUESTS": s.apps["request"].Tokens["read"], "KSQL_E2E_TOKEN_REQUESTS_RO": ""}, []string{"FAIL  token-permissions", "KSQL_E2E_TOKEN_REQUESTS (FlowNet's request poller) lacks the edit permission"}},
		{"request cleanup token lacks delete", map[string]string{"KSQL_E2E_TOKEN_REQUESTS_CLEANUP": s.apps["request"].Tokens["requester"]}, []string{"FAIL  token-permissions", "KSQL_E2E_TOKEN_REQUESTS_CLEANUP (the harness's request writer and cleanup) lacks the delete permission"}},
		{"request cleanup token equals the poller's", map[string]string{"KSQL_E2E_TOKEN_REQUESTS_CLEANUP": s.apps["request"].Tokens["poller"]}, []string{"FAIL  token-distinct", "KSQL_E2E_TOKEN_REQUESTS, KSQL_E2E_TOKEN_REQUESTS_CLEANUP"}},
		{"cleanup token lacks delete", map[string]string{"KSQL_SPIKE_TOKEN_AUDIT_CLEANUP": s.apps["audit"].Tokens["read"], "KSQL_SPIKE_TOKEN_AUDIT_RO": ""}, []string{"FAIL  token-permissions", "KSQL_SPIKE_TOKEN_AUDIT_CLEANUP (the harness's audit cleanup) lacks the delete permission"}},
		{"JOB log read-only token can write", map[string]string{"KSQL_E2E_TOKEN_LOGS": s.apps["log"].Tokens["full"], "KSQL_E2E_TOKEN_LOGS_RO": s.apps["log"].Tokens["ksqlflow"]}, []string{"FAIL  token-permissions", "KSQL_E2E_TOKEN_LOGS_RO (read-only) has the add permission"}},
		{"read-only token can write", map[string]string{"KSQL_TOKEN_DEALS": s.apps["deals"].Tokens["full"]}, []string{"FAIL  token-permissions", "KSQL_TOKEN_DEALS (read-only) has the add permission"}},
		{"token of another app", map[string]string{"KSQL_TOKEN_CUSTOMERS": s.apps["deals"].Tokens["read"], "KSQL_TOKEN_DEALS": s.apps["customers"].Tokens["read"]}, []string{"FAIL  token-permissions", "KSQL_TOKEN_CUSTOMERS (read-only): probing view"}},
		{"FlowNet launcher missing", map[string]string{"FLOWTEST_FLOWNET_BIN": "/nonexistent/node"}, []string{"FAIL  flownet-launcher", "/nonexistent/node"}},
		{"FlowNet checkout not set", map[string]string{"FLOWTEST_FLOWNET_BIN": "", "FLOWTEST_FLOWNET_BIN_ARGS": ""}, []string{"FAIL  flownet-launcher", "FLOWTEST_FLOWNET_DIR is not set"}},
		{"kSQL-Flow launcher missing", map[string]string{"KSQL_FLOW_BIN": "/nonexistent/ksql-flow"}, []string{"FAIL  ksql-flow-launcher", "/nonexistent/ksql-flow"}},
		{"kSQL-Flow launcher not set", map[string]string{"KSQL_FLOW_BIN": ""}, []string{"FAIL  ksql-flow-launcher", "KSQL_FLOW_BIN is not set"}},
		{"kSQL-Flow launcher does not answer capabilities", map[string]string{"KSQL_FLOW_BIN_ARGS": "flownet"}, []string{"FAIL  ksql-flow-launcher"}},
		{"kSQL-Flow config missing", map[string]string{"KSQL_FLOW_CONFIG": filepath.Join(t.TempDir(), "nope.json")}, []string{"FAIL  ksql-flow-config", "nope.json"}},
		{"kSQL-Flow config not set", map[string]string{"KSQL_FLOW_CONFIG": ""}, []string{"FAIL  ksql-flow-config", "KSQL_FLOW_CONFIG is not set"}},
		{"wrong env: name in the config", map[string]string{"KSQL_FLOW_CONFIG": s.writeConfig(t, "KSQL_CUSTOMERS_TOKEN")}, []string{"FAIL  ksql-flow-config", "env:KSQL_CUSTOMERS_TOKEN", "does not pass"}},
		{"config's business app is not FLOWTEST_APP_CUSTOMERS", map[string]string{"FLOWTEST_APP_CUSTOMERS": s.apps["csv"].ID}, []string{"FAIL  ksql-flow-config", "apps.顧客管理.id is not FLOWTEST_APP_CUSTOMERS"}},
		{"config's log app is not KSQL_E2E_LOG_APP_ID", map[string]string{"KSQL_E2E_LOG_APP_ID": s.apps["csv"].ID}, []string{"FAIL  ksql-flow-config", "logApp.appId is not KSQL_E2E_LOG_APP_ID"}},
		{"profile's request timeout too short to hold a read", map[string]string{"KSQL_FLOW_CONFIG": writeFile(t, "c.json", strings.Replace(mustRead(t, s.env["KSQL_FLOW_CONFIG"]), `"timezone"`, `"httpTimeoutMs": 1500, "timezone"`, 1))},
			[]string{"PASS  ksql-flow-config", "FAIL  ksql-flow-proxy", "httpTimeoutMs 1500: too short to hold a read"}},
		{"config in the pre-0.9.0 sandbox format", map[string]string{"KSQL_FLOW_CONFIG": writeFile(t, "c.json", strings.Replace(mustRead(t, s.env["KSQL_FLOW_CONFIG"]), `{"profiles"`, `{"formatVersion": 1, "profiles"`, 1))},
			[]string{"FAIL  ksql-flow-config", "not in the kSQL-Flow 0.9.0 format", "formatVersion"}},
		{"config's maxReadRows over the real cap", map[string]string{"KSQL_FLOW_CONFIG": writeFile(t, "c.json", strings.Replace(mustRead(t, s.env["KSQL_FLOW_CONFIG"]), `"timezone"`, `"limits": {"maxReadRows": 1000000}, "timezone"`, 1))},
			[]string{"FAIL  ksql-flow-config", "maxReadRows 1000000 is over the real loader's cap of 200000"}},
		{"config's base URL is another tenant", map[string]string{"KSQL_FLOW_CONFIG": writeFile(t, "c.json", strings.Replace(mustRead(t, s.env["KSQL_FLOW_CONFIG"]), s.baseURL, "https://other.example", 1))}, []string{"FAIL  ksql-flow-config", "not the tenant's"}},
	}
	if runtime.GOOS != "windows" { // the stand-in launchers below are shell scripts
		tok := s.env["KSQL_SPIKE_TOKEN_EXEC"]
		cases = append(cases, []struct {
			name   string
			change map[string]string
			want   []string
		}{
			// The launchers answer their start probes but refuse, or say nothing about, a
			// rendered fixture: named with the command and its (redacted) stderr tail.
			{"FlowNet refuses the rendered fixture", s.launcher(t, "flownet", `echo "Network validation failed with 1 error(s):" >&2; echo "- [SQL_FILE_UNREADABLE] n1: token `+tok+`" >&2; exit 1`),
				[]string{"FAIL  flownet-validate", "validate ", "exit status 1", "SQL_FILE_UNREADABLE", "PASS  flownet-launcher"}},
			{"FlowNet validate prints nothing", s.launcher(t, "flownet", `exit 0`),
				[]string{"FAIL  flownet-validate", `without "Valid network definition`}},
			{"kSQL-Flow refuses the rendered SQL", s.launcher(t, "ksql-flow", `echo "x.sql:3:1: KSQL1201 unknown app LAPP_顧客管理" >&2; exit 1`),
				[]string{"FAIL  ksql-flow-validate", "validate -f ", "--profile e2e --config ", "KSQL1201", "PASS  ksql-flow-launcher"}},
		}...)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.check(t, c.change)
			assert.Equal(t, 2, r.code, r.stdout+r.stderr)
			for _, w := range c.want {
				assert.Contains(t, r.stdout, w)
			}
			assert.NotContains(t, r.stdout, s.env["KSQL_SPIKE_TOKEN_EXEC"], "the console is redacted")
		})
	}
}

// launcher writes a stand-in for one reference CLI (flownet or ksql-flow) that runs
// validateBody for `validate …` and hands everything else to flowsandbox, and returns the
// variables that make it the launcher.
func (s *liveSetup) launcher(t *testing.T, cli, validateBody string) map[string]string {
	t.Helper()
	script := "#!/bin/sh\nif [ \"$1\" = validate ]; then\n" + validateBody + "\nfi\nexec '" + s.sb + "' " + cli + " \"$@\"\n"
	p := filepath.Join(t.TempDir(), cli+".sh")
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	if cli == "flownet" {
		return map[string]string{"FLOWTEST_FLOWNET_BIN": p, "FLOWTEST_FLOWNET_BIN_ARGS": "[]"}
	}
	return map[string]string{"KSQL_FLOW_BIN": p, "KSQL_FLOW_BIN_ARGS": ""}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// Each child gets the narrowest token its role needs: FlowNet the writer tokens (no
// delete), the harness's cleaner the cleanup tokens; without cleanup tokens both use the
// writer tokens (which then need delete).
func TestLiveTokenRoles(t *testing.T) {
	base := []string{"KSQL_SPIKE_BASE_URL=https://e2e.example", "KSQL_SPIKE_APP_EXEC=11", "KSQL_SPIKE_APP_AUDIT=12",
		"KSQL_E2E_LOG_APP_ID=13", "KSQL_SPIKE_TOKEN_EXEC=writer-exec", "KSQL_SPIKE_TOKEN_AUDIT=writer-audit",
		"KSQL_SPIKE_TOKEN_EXEC_RO=ro-exec", "KSQL_E2E_TOKEN_LOGS=logs", "KSQL_E2E_TOKEN_LOGS_RO=logs-ro",
		"FLOWTEST_FLOWNET_BIN=node", "FLOWTEST_FLOWNET_BIN_ARGS=cli.js", "KSQL_FLOW_BIN=ksql-flow"}
	load := func(extra ...string) *target.Target {
		cfg, err := config.Load(config.Options{Target: "live", OSEnv: append(append([]string(nil), base...), extra...)})
		require.NoError(t, err)
		tgt, err := liveTarget(cfg)
		require.NoError(t, err)
		return tgt
	}
	tgt := load("KSQL_SPIKE_TOKEN_EXEC_CLEANUP=cleanup-exec", "KSQL_SPIKE_TOKEN_AUDIT_CLEANUP=cleanup-audit")
	env := strings.Join(tgt.FlowNetEnv("", t.TempDir()), "\n")
	assert.Contains(t, env, "KSQL_FLOWNET_STATE_API_TOKEN=writer-exec")
	assert.Contains(t, env, "KSQL_FLOWNET_AUDIT_API_TOKEN=writer-audit")
	assert.NotContains(t, env, "cleanup-", "FlowNet never gets a cleanup token")
	assert.Equal(t, "cleanup-exec", tgt.Apps[target.RoleState].Token("full"), "the cleaner sweeps with the cleanup token")
	assert.Equal(t, "cleanup-audit", tgt.Apps[target.RoleAudit].Token("full"))
	assert.Equal(t, "ro-exec", tgt.Apps[target.RoleState].Tokens["read"])

	tgt = load()
	assert.Equal(t, "writer-exec", tgt.Apps[target.RoleState].Token("full"), "without a cleanup token the writer sweeps")
	assert.Contains(t, strings.Join(tgt.FlowNetEnv("", t.TempDir()), "\n"), "KSQL_FLOWNET_STATE_API_TOKEN=writer-exec")

	// The request app: the poller gets KSQL_E2E_TOKEN_REQUESTS (view/edit), the harness
	// writes and sweeps with KSQL_E2E_TOKEN_REQUESTS_CLEANUP; without it, both use the first.
	req := []string{"KSQL_E2E_REQUEST_APP_ID=14", "KSQL_E2E_TOKEN_REQUESTS=poller-req", "KSQL_E2E_TOKEN_REQUESTS_RO=ro-req"}
	tgt = load(append(req, "KSQL_E2E_TOKEN_REQUESTS_CLEANUP=cleanup-req")...)
	env = strings.Join(tgt.FlowNetEnv("", t.TempDir()), "\n")
	assert.Contains(t, env, "KSQL_FLOWNET_REQUEST_API_TOKEN=poller-req")
	assert.NotContains(t, env, "cleanup-req", "the poller never gets the harness's request token")
	assert.Equal(t, "cleanup-req", tgt.Apps[target.RoleRequest].Token("full"), "the harness writes and sweeps requests with its own token")
	assert.Equal(t, "ro-req", tgt.Apps[target.RoleRequest].Tokens["read"])
	tgt = load(req...)
	assert.Equal(t, "poller-req", tgt.Apps[target.RoleRequest].Token("full"), "without a request cleanup token the poller's token serves the harness")
	assert.Contains(t, strings.Join(tgt.FlowNetEnv("", t.TempDir()), "\n"), "KSQL_FLOWNET_REQUEST_API_TOKEN=poller-req")
}

// Another runner on the same tenant is found from the tenant itself: a held network lock, a
// RUNNING run or invocation updated within the window refuse check (exit 2), naming the
// record kinds, the scope prefix and ages, and never a token or app id. A crash's stale
// leftovers (lease run out, RUNNING records older than the window, released tombstones) do
// not.
func TestLiveSetupRefusesAnotherRunner(t *testing.T) {
	s := newLiveSetup(t)
	hc, err := kintoneapi.HTTPClientWithCA(s.caFile)
	require.NoError(t, err)
	st, au := s.apps["state"], s.apps["audit"]
	// The other runner writes with its own (full) tokens.
	api := kintoneapi.New(s.baseURL, hc, map[string]string{st.ID: st.Tokens["full"], au.ID: au.Tokens["full"]})
	ctx := context.Background()
	now := time.Now().UTC()
	ts := func(d time.Duration) string { return now.Add(d).Truncate(time.Minute).Format(time.RFC3339) }
	add := func(app string, kv map[string]any) string {
		t.Helper()
		id, _, err := api.AddRecord(ctx, app, kintoneapi.Values(kv))
		require.NoError(t, err)
		return id
	}
	const otherScope, staleScope = "KSQL_FLOW_TEST_251201051500_ab12", "KSQL_FLOW_TEST_251201041500_cd34"

	// Leftovers of a crash an hour ago, and finished work: not a runner.
	add(st.ID, map[string]any{"record_key": "LOCK:old", "record_type": "NETWORK_LOCK", "lock_key": "old", "status": "RUNNING",
		"owner_invocation_id": "invoke_old", "heartbeat_at": ts(-time.Hour), "lease_expires_at": ts(-59 * time.Minute)})
	add(st.ID, map[string]any{"record_key": "LOCKDONE:x", "record_type": "NETWORK_LOCK", "lock_key": "", "status": "SUCCESS",
		"heartbeat_at": ts(0), "lease_expires_at": ts(time.Minute)})
	add(st.ID, map[string]any{"record_key": "R1:old", "record_type": "NETWORK_RUN", "run_id": "netrun_old", "status": "RUNNING",
		"network_id": staleScope + "_m5_success", "business_key": staleScope, "updated_at": ts(-time.Hour)})
	add(st.ID, map[string]any{"record_key": "R1:done", "record_type": "NETWORK_RUN", "run_id": "netrun_done", "status": "SUCCESS",
		"network_id": staleScope + "_done_m5_success", "updated_at": ts(0)})
	add(au.ID, map[string]any{"record_key": "INV:invoke_old", "record_type": "RUN_INVOCATION", "invocation_id": "invoke_old",
		"run_id": "netrun_old", "status": "RUNNING", "started_at": ts(-time.Hour)})
	ok := s.check(t, nil)
	require.Equal(t, 0, ok.code, ok.stdout+ok.stderr)
	assert.Contains(t, ok.stdout, "PASS  tenant-activity")

	// Another runner at work: its lock held, its run and invocation RUNNING and recent.
	add(au.ID, map[string]any{"record_key": "INV:invoke_live", "record_type": "RUN_INVOCATION", "invocation_id": "invoke_live",
		"run_id": "netrun_live", "status": "RUNNING", "started_at": ts(-time.Minute)})
	add(st.ID, map[string]any{"record_key": "R1:live", "record_type": "NETWORK_RUN", "run_id": "netrun_live", "status": "RUNNING",
		"network_id": otherScope + "_m5_serial_success_m5_success", "business_key": otherScope + "_m5_serial_success", "updated_at": ts(0)})
	add(st.ID, map[string]any{"record_key": "LOCK:live", "record_type": "NETWORK_LOCK", "lock_key": "live", "status": "RUNNING",
		"owner_invocation_id": "invoke_live", "heartbeat_at": ts(0), "lease_expires_at": ts(time.Minute)})
	r := s.check(t, nil)
	assert.Equal(t, 2, r.code, r.stdout+r.stderr)
	for _, w := range []string{"FAIL  tenant-activity", "another runner is at work on this tenant",
		"scope " + otherScope + ": held network lock (heartbeat ", "RUNNING network run (updated ", "RUNNING invocation (started ",
		"Wait until it is done", "sweep what its scope left"} {
		assert.Contains(t, r.stdout, w)
	}
	assert.NotContains(t, r.stdout, staleScope, "a stale leftover or finished run is not named")
	for _, a := range []target.App{st, au} {
		assert.NotContains(t, r.stdout, "app "+a.ID)
		for _, tok := range a.Tokens {
			assert.NotContains(t, r.stdout, tok)
		}
	}
}
