package emulator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/joho/godotenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// operatorEnv writes the operator env of a fresh emulator and reads it back: .env as
// godotenv reads it, tokens.sh as NAME -> value.
func operatorEnv(t *testing.T) (*Server, string, map[string]string, map[string]string) {
	t.Helper()
	s := startTest(t, Options{})
	dir := filepath.Join(t.TempDir(), "op")
	require.NoError(t, s.WriteOperatorEnv(dir, OperatorEnvOptions{Sandbox: "/opt/flow sandbox/flowsandbox"}))
	env, err := godotenv.Read(filepath.Join(dir, OperatorDotEnv))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, OperatorTokens))
	require.NoError(t, err)
	exports := map[string]string{}
	line := regexp.MustCompile(`^export ([A-Z0-9_]+)='([^']*)'$`)
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "tokens.sh line %q", l)
		exports[m[1]] = m[2]
	}
	return s, dir, env, exports
}

func permsOf(s *Server, tok string) []string {
	var out []string
	for p, ok := range s.grants[tok].perms {
		if ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Each role gets the narrowest token the emulator has for it; writable tokens only in
// tokens.sh, read-only ones only in .env.
func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestOperatorEnvGivesEachRoleItsNarrowestToken(t *testing.T) {
	s, _, env, exports := operatorEnv(t)
	want := map[string][]string{
		"KSQL_SPIKE_TOKEN_EXEC":           {"add", "edit", "view"},
		"KSQL_SPIKE_TOKEN_AUDIT":          {"add", "edit", "view"},
		"KSQL_E2E_TOKEN_LOGS":             {"add", "edit", "view"},
		"KSQL_E2E_TOKEN_REQUESTS":         {"edit", "view"},
		"KSQL_E2E_TOKEN_REQUESTS_CLEANUP": {"add", "delete", "edit", "view"},
		"KSQL_CSV1_TARGET_API_TOKEN":      {"add", "delete", "edit", "view"},
		"KSQL_SPIKE_TOKEN_EXEC_RO":        {"view"},
		"KSQL_SPIKE_TOKEN_AUDIT_RO":       {"view"},
		"KSQL_E2E_TOKEN_LOGS_RO":          {"view"},
		"KSQL_E2E_TOKEN_REQUESTS_RO":      {"view"},
		"KSQL_CSV1_TARGET_API_TOKEN_RO":   {"view"},
		"KSQL_TOKEN_CUSTOMERS":            {"view"},
		"KSQL_TOKEN_DEALS":                {"view"},
	}
	for _, tv := range operatorTokens {
		tok, inEnv := env[tv.name]
		exp, inExports := exports[tv.name]
		if tv.readOnly {
			require.True(t, inEnv, "%s in .env", tv.name)
			assert.False(t, inExports, "%s is read-only: not in tokens.sh", tv.name)
		} else {
			require.True(t, inExports, "%s in tokens.sh", tv.name)
			assert.False(t, inEnv, "%s is writable: never in .env", tv.name)
			tok = exp
		}
		g, ok := s.grants[tok]
		require.True(t, ok, "%s is one of the emulator's tokens", tv.name)
		assert.Equal(t, tv.role, g.a.schema.Role, "%s belongs to the %s app", tv.name, tv.role)
		if w, ok := want[tv.name]; ok {
			assert.Equal(t, w, permsOf(s, tok), tv.name)
		}
		// No set of the app that covers the needs is narrower.
		for set, perms := range g.a.schema.Tokens {
			covers := true
			for _, p := range tv.needs {
				covers = covers && slices.Contains(perms, p)
			}
			if covers {
				assert.LessOrEqual(t, len(permsOf(s, tok)), len(perms), "%s: set %s is narrower", tv.name, set)
			}
		}
	}
	// The cleanup tokens can view and delete, and nothing else (the emulator's cleanup set).
	for _, n := range []string{"KSQL_SPIKE_TOKEN_EXEC_CLEANUP", "KSQL_SPIKE_TOKEN_AUDIT_CLEANUP"} {
		assert.ElementsMatch(t, []string{"view", "delete"}, permsOf(s, exports[n]), n)
		assert.NotEqual(t, exports[strings.TrimSuffix(n, "_CLEANUP")], exports[n], "%s differs from FlowNet's writer", n)
	}
	for name, v := range env {
		for en, ev := range exports {
			assert.NotEqual(t, ev, v, ".env %s holds the writable token %s", name, en)
		}
	}
}

// The rest of the setup: the tenant, its apps, CA, launchers, kSQL-Flow config, deny list
// and IO dir, as docs/live.md describes them.
func TestOperatorEnvWritesTheLiveSetup(t *testing.T) {
	s, dir, env, exports := operatorEnv(t)
	assert.Equal(t, s.BaseURL(), env["KSQL_SPIKE_BASE_URL"])
	assert.Equal(t, "e2e", env["KSQL_FLOWNET_PROFILE"])
	ids := map[string]string{}
	for _, a := range s.Apps() {
		ids[a.Role] = a.ID
	}
	for _, a := range operatorApps {
		assert.Equal(t, ids[a.role], env[a.name], a.name)
	}
	ca, err := os.ReadFile(env["FLOWTEST_CA_FILE"])
	require.NoError(t, err)
	orig, err := os.ReadFile(s.CAFile())
	require.NoError(t, err)
	assert.Equal(t, orig, ca)
	// A launcher path with a space survives godotenv.
	assert.Equal(t, "/opt/flow sandbox/flowsandbox", env["FLOWTEST_FLOWNET_BIN"])
	assert.Equal(t, `["flownet"]`, env["FLOWTEST_FLOWNET_BIN_ARGS"])
	assert.Equal(t, "/opt/flow sandbox/flowsandbox", env["KSQL_FLOW_BIN"])
	assert.Equal(t, `["ksql-flow"]`, env["KSQL_FLOW_BIN_ARGS"])
	st, err := os.Stat(env["KSQL_FLOWNET_IO_DIR"])
	require.NoError(t, err)
	assert.True(t, st.IsDir() && filepath.IsAbs(env["KSQL_FLOWNET_IO_DIR"]))
	for _, bad := range []string{"KSQL_FLOWNET_REQUEST_APP_ID", "KSQL_FLOWNET_REQUEST_API_TOKEN"} {
		assert.NotContains(t, env, bad, "production request-app names are never set")
	}

	data, err := os.ReadFile(env["KSQL_FLOW_CONFIG"])
	require.NoError(t, err)
	var cfg struct {
		Profiles map[string]struct {
			BaseURL string                    `json:"baseUrl"`
			Apps    map[string]map[string]any `json:"apps"`
			LogApp  string                    `json:"logApp"`
			Retry   map[string]any            `json:"retry"`
		} `json:"profiles"`
	}
	require.NoError(t, json.Unmarshal(data, &cfg))
	p := cfg.Profiles["e2e"]
	assert.Equal(t, s.BaseURL(), p.BaseURL)
	// The real kSQL-Flow 0.9.0 format: integer ids, token lists, logApp a logical name.
	assert.NotContains(t, string(data), "formatVersion")
	assert.Equal(t, "JOB_LOG", p.LogApp)
	for logical, role := range map[string]string{"JOB_LOG": "log", "顧客管理": "customers", "案件管理": "deals", "KSQL_FLOW_TEST_CSV1": "csv"} {
		assert.Equal(t, []string{"id", "tokens"}, sortedKeys(p.Apps[logical]), logical)
		assert.Equal(t, ids[role], fmt.Sprint(p.Apps[logical]["id"]), logical)
		assert.Len(t, p.Apps[logical]["tokens"], 1, logical)
	}
	assert.Equal(t, map[string]any{"maxAttempts": 8.0, "initialDelayMs": 250.0, "maxDelayMs": 8000.0, "respectRetryAfter": true}, p.Retry,
		"kSQL-Flow backs off on 429 like the shared client")
	refs := regexp.MustCompile(`"env:([A-Z0-9_]+)"`).FindAllStringSubmatch(string(data), -1)
	assert.Len(t, refs, 4)
	for _, r := range refs {
		_, a := env[r[1]]
		_, b := exports[r[1]]
		assert.True(t, a || b, "env:%s is set by the operator env", r[1])
	}

	deny, err := os.ReadFile(env["FLOWTEST_DENYLIST_FILE"])
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, OperatorDenyList), env["FLOWTEST_DENYLIST_FILE"])
	entries := regexp.MustCompile(`(?m)^app:(\d+)$`).FindAllStringSubmatch(string(deny), -1)
	require.NotEmpty(t, entries, "live mode refuses an empty deny list")
	for _, e := range entries {
		for role, id := range ids {
			assert.NotEqual(t, id, e[1], "the deny list names the emulator's %s app", role)
		}
	}
	for _, f := range []string{OperatorDotEnv, OperatorTokens} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		if st.Mode().Perm()&0o077 != 0 && os.PathSeparator == '/' {
			t.Errorf("%s is readable by others: %v", f, st.Mode().Perm())
		}
	}
}

func TestOperatorEnvNeedsHTTPS(t *testing.T) {
	s := startTest(t, Options{PlainHTTP: true})
	err := s.WriteOperatorEnv(t.TempDir(), OperatorEnvOptions{Sandbox: "/bin/flowsandbox"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "https")
}
