package config

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/safety"
)

func writeEnv(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), ".env")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestPrecedenceAndOrigins(t *testing.T) {
	env := writeEnv(t, "\uFEFFKSQL_FLOWNET_PROFILE=from-dotenv\nKSQL_SPIKE_APP_EXEC=1\nKSQL_SPIKE_APP_AUDIT=2\nKSQL_E2E_LOG_APP_ID=3\nKSQL_E2E_TOKEN_LOGS_RO=ro\nFLOWTEST_FLOWNET_DIR=\n")
	cfg, err := Load(Options{
		EnvFile: env,
		OSEnv:   []string{"KSQL_SPIKE_APP_EXEC=10", "KSQL_SPIKE_APP_AUDIT=", "KSQL_E2E_LOG_APP_ID=30", "PATH=/bin"},
		Flags:   map[string]string{"KSQL_E2E_LOG_APP_ID": "300", "profile": "flag-profile"},
	})
	require.NoError(t, err)
	require.True(t, cfg.EnvFileFound)

	check := func(name, value string, origin safety.Origin, inDot bool) {
		t.Helper()
		v, ok := cfg.Lookup(name)
		require.True(t, ok, name)
		require.Equal(t, value, v.Value, name)
		require.Equal(t, origin, v.Origin, name)
		require.Equal(t, inDot, v.InDotEnv, name)
	}
	check(safety.VarProfile, "flag-profile", safety.OriginFlag, true) // flag > .env (first key after BOM)
	check(safety.VarAppExec, "10", safety.OriginOSEnv, true)          // OS env > .env
	check(safety.VarAppAudit, "2", safety.OriginDotEnv, true)         // empty OS value counts as unset
	check(safety.VarAppLog, "300", safety.OriginFlag, true)           // flag > OS env > .env
	check(safety.VarTokenLogsRO, "ro", safety.OriginDotEnv, true)     // read-only token from .env
	check("PATH", "/bin", safety.OriginOSEnv, false)                  // any variable readable
	_, ok := cfg.Lookup(VarFlowNetDir)
	require.False(t, ok, "empty .env value is unset")
	require.Equal(t, "flag-profile", cfg.Profile())
	require.Equal(t, safety.TargetSandbox, cfg.Target)
	require.Equal(t, safety.OriginDefault, cfg.TargetOrigin)
	require.Equal(t, 1, cfg.Concurrency)
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(Options{Flags: map[string]string{"no-such-flag": "x"}})
	require.ErrorContains(t, err, "no-such-flag")
	_, err = Load(Options{OSEnv: []string{VarConcurrency + "=two"}})
	require.ErrorContains(t, err, VarConcurrency)
	_, err = Load(Options{EnvFile: writeEnv(t, "A='unterminated\n")})
	require.ErrorContains(t, err, ".env")
	cfg, err := Load(Options{EnvFile: filepath.Join(t.TempDir(), "missing.env")})
	require.NoError(t, err, "a missing .env is not an error")
	require.False(t, cfg.EnvFileFound)
}

func TestTargetSelection(t *testing.T) {
	cfg, err := Load(Options{Target: "live"})
	require.NoError(t, err)
	require.Equal(t, safety.TargetLive, cfg.Target)
	require.Equal(t, safety.OriginFlag, cfg.TargetOrigin)

	cfg, err = Load(Options{Flags: map[string]string{"target": "live"}})
	require.NoError(t, err)
	require.Equal(t, safety.TargetLive, cfg.Target)

	// FLOWTEST_TARGET never selects live; it is reported.
	cfg, err = Load(Options{OSEnv: []string{"FLOWTEST_TARGET=live"}, EnvFile: writeEnv(t, "FLOWTEST_TARGET=live\n")})
	require.NoError(t, err)
	require.Equal(t, safety.TargetSandbox, cfg.Target)
	rep := safety.Preflight(cfg.SafetyInput(nil, nil))
	var subjects []string
	for _, c := range rep.Violations() {
		require.Equal(t, "target", c.Name)
		subjects = append(subjects, c.Subject)
	}
	require.Len(t, subjects, 2)
}

func TestWritableTokenInDotEnvRefused(t *testing.T) {
	env := writeEnv(t, "KSQL_SPIKE_TOKEN_EXEC=secret-exec\nKSQL_E2E_TOKEN_REQUESTS_RO=ro\n")
	// The OS environment wins, but the .env copy is still refused.
	for _, target := range []string{"", "live"} {
		cfg, err := Load(Options{Target: target, EnvFile: env, OSEnv: []string{"KSQL_SPIKE_TOKEN_EXEC=os-exec"}, SearchDir: "."})
		require.NoError(t, err)
		require.Equal(t, "os-exec", cfg.Get(safety.VarTokenExec))
		rep := safety.Preflight(cfg.SafetyInput(nil, nil))
		var hit bool
		for _, c := range rep.Violations() {
			if c.Name == "token-origin" {
				require.Equal(t, safety.VarTokenExec, c.Subject)
				require.Contains(t, c.Reason, env)
				hit = true
			}
			require.NotEqual(t, safety.VarTokenRequestsRO, c.Subject, "read-only token in .env is fine")
		}
		require.True(t, hit, "target %q: %+v", target, rep.Violations())
	}
}

func TestDenyListLoading(t *testing.T) {
	t.Run("repository default found walking up", func(t *testing.T) {
		cfg, err := Load(Options{Target: "live", SearchDir: "."})
		require.NoError(t, err)
		require.Empty(t, cfg.DenyListErrors)
		require.True(t, cfg.DenyList.HasApp("4249"))
		require.Len(t, cfg.DenyListSources, 1)
		require.True(t, strings.HasSuffix(filepath.ToSlash(cfg.DenyListSources[0]), DefaultDenyListFile))
	})
	t.Run("env entries added", func(t *testing.T) {
		cfg, err := Load(Options{SearchDir: ".", OSEnv: []string{safety.VarDenyList + "=app:9001,job:nightly_close"}})
		require.NoError(t, err)
		require.True(t, cfg.DenyList.HasApp("9001"))
		require.True(t, cfg.DenyList.HasApp("4261"))
		require.True(t, cfg.DenyList.HasJob("nightly_close"))
	})
	t.Run("live without a file fails closed", func(t *testing.T) {
		cfg, err := Load(Options{Target: "live", SearchDir: t.TempDir()})
		require.NoError(t, err)
		require.NotEmpty(t, cfg.DenyListErrors)
		rep := safety.Preflight(cfg.SafetyInput(nil, nil))
		var names []string
		for _, c := range rep.Violations() {
			names = append(names, c.Name)
		}
		require.Contains(t, names, "denylist")
	})
	t.Run("sandbox without a file is fine", func(t *testing.T) {
		cfg, err := Load(Options{SearchDir: t.TempDir()})
		require.NoError(t, err)
		require.Empty(t, cfg.DenyListErrors)
	})
	t.Run("explicit missing file is an error", func(t *testing.T) {
		cfg, err := Load(Options{DenyListFile: filepath.Join(t.TempDir(), "nope.txt")})
		require.NoError(t, err)
		require.NotEmpty(t, cfg.DenyListErrors)
	})
	t.Run("malformed file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "deny.txt")
		require.NoError(t, os.WriteFile(p, []byte("app:4261\n4262\n"), 0o644))
		cfg, err := Load(Options{Flags: map[string]string{"denylist-file": p}})
		require.NoError(t, err)
		require.Len(t, cfg.DenyListErrors, 1)
		require.Contains(t, cfg.DenyListErrors[0], ":2:")
		require.True(t, cfg.DenyList.HasApp("4261"), "good entries are kept")
	})
}

func liveEnv() []string {
	return []string{
		"KSQL_SPIKE_BASE_URL=https://example.cybozu.com",
		"KSQL_SPIKE_APP_EXEC=4257", "KSQL_SPIKE_APP_AUDIT=4258", "KSQL_E2E_LOG_APP_ID=4264",
		"KSQL_E2E_REQUEST_APP_ID=4267", "KSQL_CSV1_TARGET_APP_ID=4270",
		"KSQL_SPIKE_TOKEN_EXEC=t1", "KSQL_SPIKE_TOKEN_AUDIT=t2", "KSQL_E2E_TOKEN_LOGS=t3", "KSQL_E2E_TOKEN_LOGS_RO=t4",
		"KSQL_E2E_TOKEN_REQUESTS=t5", "KSQL_E2E_TOKEN_REQUESTS_RO=t6", "KSQL_CSV1_TARGET_API_TOKEN=t7", "KSQL_CSV1_TARGET_API_TOKEN_RO=t7r",
	}
}

func TestSafetyInput(t *testing.T) {
	cfg, err := Load(Options{Target: "live", OSEnv: liveEnv(), SearchDir: "."})
	require.NoError(t, err)
	in := cfg.SafetyInput([]safety.Identifier{{Kind: safety.IdentScope, Value: "KSQL_FLOW_TEST_x"}}, nil)
	rep := safety.Preflight(in)
	require.True(t, rep.OK(), "%+v", rep.Violations())
	require.Len(t, in.Apps, len(safety.AppCatalog()))

	apps := cfg.LiveApps()
	require.Equal(t, AppSettings{Role: safety.RoleRequest, ID: "4267", Full: "t5", Read: "t6"}, apps[safety.RoleRequest])
	require.Equal(t, "t7", apps[safety.RoleCSV].Full)
	require.Equal(t, "t1", cfg.Secrets()[safety.VarTokenExec])

	// The optional cleanup tokens: the harness's own, beside the product's writable token.
	cfg, err = Load(Options{Target: "live", OSEnv: append(liveEnv(), "KSQL_E2E_TOKEN_REQUESTS_CLEANUP=t8", "KSQL_SPIKE_TOKEN_EXEC_CLEANUP=t9"), SearchDir: "."})
	require.NoError(t, err)
	apps = cfg.LiveApps()
	require.Equal(t, AppSettings{Role: safety.RoleRequest, ID: "4267", Full: "t5", Read: "t6", Cleanup: "t8"}, apps[safety.RoleRequest])
	require.Equal(t, "t9", apps[safety.RoleState].Cleanup)
	require.Equal(t, "t8", cfg.Secrets()[safety.VarTokenRequestsCleanup], "redacted like every token")
	require.True(t, safety.Preflight(cfg.SafetyInput([]safety.Identifier{{Kind: safety.IdentScope, Value: "KSQL_FLOW_TEST_x"}}, nil)).OK())

	// Sandbox: live values in the environment are neither checked nor used.
	cfg, err = Load(Options{OSEnv: append(liveEnv(), "KSQL_SPIKE_BASE_URL=http://example.cybozu.com"), SearchDir: "."})
	require.NoError(t, err)
	in = cfg.SafetyInput(nil, nil)
	require.Empty(t, in.Apps)
	require.Empty(t, in.Tokens)
	require.False(t, in.BaseURL.Set())
	require.True(t, safety.Preflight(in).OK())
}

func TestArgsAndCommands(t *testing.T) {
	a, err := ParseArgs("X", `["C:\\ksql flow\\dist\\cli.js", "--x"]`)
	require.NoError(t, err)
	require.Equal(t, []string{`C:\ksql flow\dist\cli.js`, "--x"}, a)
	a, err = ParseArgs("X", "  ../ksql-flow/dist/cli.js  --y ")
	require.NoError(t, err)
	require.Equal(t, []string{"../ksql-flow/dist/cli.js", "--y"}, a)
	_, err = ParseArgs("X", "[broken")
	require.ErrorContains(t, err, "X")

	cfg, err := Load(Options{OSEnv: []string{VarFlowNetDir + "=/src/ksql-flownet"}})
	require.NoError(t, err)
	bin, args, dir, err := cfg.FlowNetCommand()
	require.NoError(t, err)
	require.Equal(t, "node", bin)
	require.Equal(t, []string{filepath.Join("/src/ksql-flownet", "dist", "cli", "index.js")}, args)
	require.Equal(t, "/src/ksql-flownet", dir)

	cfg, err = Load(Options{})
	require.NoError(t, err)
	_, _, _, err = cfg.FlowNetCommand()
	require.ErrorContains(t, err, VarFlowNetDir)

	cfg, err = Load(Options{OSEnv: []string{VarFlowConfigPath + "=/old.json"}})
	require.NoError(t, err)
	require.Equal(t, "/old.json", cfg.FlowConfig())
}

// The template must list every variable flowtest reads, and nothing else,
// each with an empty value.
func TestTemplateListsEveryVariable(t *testing.T) {
	path := findUp(".", "env.e2e.example")
	require.NotEmpty(t, path, "env.e2e.example at the repository root")
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	line := regexp.MustCompile(`^([A-Z0-9_]+)=(.*)$`)
	var inTemplate []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		require.Empty(t, m[2], "%s must have an empty value in the template", m[1])
		inTemplate = append(inTemplate, m[1])
	}
	require.NoError(t, sc.Err())
	var known []string
	for _, v := range Variables() {
		known = append(known, v.Name)
	}
	slices.Sort(inTemplate)
	slices.Sort(known)
	require.Equal(t, known, inTemplate)
}
