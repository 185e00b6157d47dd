package target

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleTarget() *Target {
	return &Target{
		Name: "sandbox", Profile: "e2e", BaseURL: "https://127.0.0.1:4000", CAFile: "/tmp/ca.pem",
		Apps: map[string]App{
			RoleState:     {Role: RoleState, ID: "101", Tokens: map[string]string{"full": "st-full", "flownet": "st-fn", "read": "st-ro"}},
			RoleAudit:     {Role: RoleAudit, ID: "102", Tokens: map[string]string{"full": "au-full", "flownet": "au-fn", "read": "au-ro"}},
			RoleLog:       {Role: RoleLog, ID: "104", Tokens: map[string]string{"full": "lg-full", "ksqlflow": "lg-kf", "read": "lg-ro"}},
			RoleCustomers: {Role: RoleCustomers, ID: "105", Tokens: map[string]string{"full": "cu-full", "read": "cu-ro"}},
			RoleDeals:     {Role: RoleDeals, ID: "106", Tokens: map[string]string{"full": "de-full", "read": "de-ro"}},
		},
		KsqlFlow:       Command{Path: "/bin/flowsandbox", Args: []string{"ksql-flow"}},
		KsqlFlowConfig: "/tmp/cfg.json",
	}
}

func envOf(list []string) map[string]string {
	m := map[string]string{}
	for _, kv := range list {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// Each child gets the narrowest token its role needs: FlowNet view/add/edit on state and
// audit, read-only on the JOB log; kSQL-Flow writes the JOB log and only reads business apps.
func TestFlowNetEnvUsesNarrowTokens(t *testing.T) {
	env := envOf(sampleTarget().FlowNetEnv("https://127.0.0.1:5000", "/work/ksql"))
	assert.Equal(t, "https://127.0.0.1:5000", env["KSQL_FLOWNET_BASE_URL"], "the proxy address replaces the base URL")
	assert.Equal(t, "st-fn", env["KSQL_FLOWNET_STATE_API_TOKEN"])
	assert.Equal(t, "au-fn", env["KSQL_FLOWNET_AUDIT_API_TOKEN"])
	assert.Equal(t, "lg-ro", env["KSQL_FLOW_LOG_API_TOKEN"])
	assert.Equal(t, "lg-kf", env[EnvKsqlLogToken])
	assert.Equal(t, "cu-ro", env[EnvKsqlCustomersToken])
	assert.Equal(t, "de-ro", env[EnvKsqlDealsToken])
	assert.Equal(t, `["ksql-flow"]`, env["KSQL_FLOW_BIN_ARGS"])
	for k, v := range env {
		assert.NotContains(t, []string{"st-full", "au-full", "lg-full"}, v, "%s must not carry a delete-capable token", k)
	}
}

func TestKsqlFlowConfigHoldsNoToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cfg.json")
	_, err := WriteKsqlFlowConfig(sampleTarget(), path)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, tok := range []string{"st-", "au-", "lg-", "cu-", "de-"} {
		assert.NotContains(t, string(data), tok)
	}
	// The real kSQL-Flow 0.9.0 format: integer ids, token lists, logApp a logical name.
	var cfg struct {
		Profiles map[string]struct {
			Apps map[string]struct {
				ID     json.Number `json:"id"`
				Tokens []string    `json:"tokens"`
			}
			LogApp string         `json:"logApp"`
			Limits map[string]int `json:"limits"`
		}
	}
	require.NoError(t, json.Unmarshal(data, &cfg))
	assert.NotContains(t, string(data), "formatVersion")
	assert.NotContains(t, string(data), "caFile")
	p := cfg.Profiles["e2e"]
	assert.Equal(t, json.Number("105"), p.Apps[LogicalCustomers].ID)
	assert.Equal(t, []string{"env:" + EnvKsqlCustomersToken}, p.Apps[LogicalCustomers].Tokens)
	assert.Equal(t, LogicalLog, p.LogApp)
	assert.Equal(t, []string{"env:" + EnvKsqlLogToken}, p.Apps[LogicalLog].Tokens)
	assert.LessOrEqual(t, p.Limits["maxReadRows"], 200000, "the real loader's cap")
}

func TestFindSandboxBinaryExplainsHowToBuild(t *testing.T) {
	_, err := FindSandboxBinary(filepath.Join(t.TempDir(), "missing"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "make build")
	t.Setenv("PATH", t.TempDir())
	if _, err := FindSandboxBinary(""); err != nil {
		assert.Contains(t, err.Error(), "--sandbox-bin")
	}
}

func TestSecretsAndRolesForRedaction(t *testing.T) {
	tg := sampleTarget()
	secrets := tg.Secrets()
	assert.Equal(t, "st-full", secrets["SANDBOX_TOKEN_STATE_FULL"])
	assert.Len(t, secrets, 13, "every token of every app")
	assert.Equal(t, "state", tg.AppRoles()["101"])
}
