package ksqlflow

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeCfg(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ksql.config.json")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

// The real kSQL-Flow 0.9.0 format (dist/config.js) loads: integer ids, token lists,
// logApp as a logical name, defaults from the file's sections, extends without apps.
func TestLoadConfigRealFormat(t *testing.T) {
	t.Setenv("KSQL_T_A", "tokA")
	t.Setenv("KSQL_T_B", "tokB")
	t.Setenv("KSQL_T_BASE", "https://Tenant.Example.com:443/")
	p := writeCfg(t, `{
	  "defaultProfile": "prod",
	  "limits": {"maxApiCalls": 500},
	  "retry": {"maxAttempts": 2},
	  "profiles": {
	    "base": {"baseUrl": "env:KSQL_T_BASE", "timezone": "Asia/Tokyo", "httpTimeoutMs": 1500.5,
	             "apps": {"inherited": {"id": 9}}},
	    "prod": {"extends": "base", "guestSpaceId": 7,
	             "apps": {"顧客管理": {"id": 105, "tokens": ["env:KSQL_T_A", "literal-token"]},
	                      "JOB_LOG": {"id": 104, "tokens": ["env:KSQL_T_B"]}},
	             "logApp": "JOB_LOG",
	             "limits": {"maxReadRows": 200000, "maxTempRows": null}}
	  }}`)
	prof, err := LoadConfig(p, "")
	require.NoError(t, err)
	assert.Equal(t, "prod", prof.Name, "defaultProfile")
	assert.Equal(t, "https://Tenant.Example.com:443", prof.BaseURL)
	assert.Equal(t, "Asia/Tokyo", *prof.Timezone, "inherited through extends")
	assert.Equal(t, 1500.5, prof.HTTPTimeoutMs)
	assert.EqualValues(t, 7, *prof.GuestSpaceID)
	assert.Equal(t, map[string]string{"顧客管理": "105", "JOB_LOG": "104"}, prof.appIDs(), "apps are never inherited")
	assert.Equal(t, "tokA,literal-token", prof.Apps["顧客管理"].Token, "tokens resolved and comma-joined")
	assert.Equal(t, &LogAppRef{Name: "JOB_LOG", AppID: "104", Token: "tokB"}, prof.LogApp)
	assert.EqualValues(t, 200000, *prof.Limits.MaxReadRows)
	assert.Nil(t, prof.Limits.MaxAPICalls, "the profile's limits replace the file's whole")
	assert.EqualValues(t, 3600, *prof.Limits.BatchTimeoutSec, "the real's default")
	assert.Equal(t, Retry{MaxAttempts: 2, InitialDelayMs: 1000, MaxDelayMs: 60000, RespectRetryAfter: true}, prof.Retry, "file retry over the real's defaults")

	d, err := describe(prof, prof.Name)
	require.NoError(t, err)
	assert.Equal(t, "https://tenant.example.com", d.BaseURL, "WHATWG-normalised: host lower case, default port dropped")
	assert.Equal(t, map[string]int64{"顧客管理": 105, "JOB_LOG": 104}, d.Apps)
	assert.Equal(t, &LogAppDesc{Name: "JOB_LOG", AppID: 104}, d.LogApp)
}

// What the real loader refuses, the stand-in refuses, naming the key in the real's words.
func TestLoadConfigRefusals(t *testing.T) {
	t.Setenv("KSQL_T_A", "tokA")
	app := `"apps": {"A": {"id": 5, "tokens": ["env:KSQL_T_A"]}}`
	for _, c := range []struct{ name, body, want string }{
		{"formatVersion (old sandbox format)", `{"formatVersion": 1, "profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `}}}`,
			"config.formatVersion: 未知の設定キーです (the real config has no formatVersion"},
		{"old app entry", `{"profiles": {"p": {"baseUrl": "https://x.example.com", "apps": {"A": {"appId": "5", "token": "env:KSQL_T_A"}}}}}`,
			"profiles.p.apps.A.appId: 未知の設定キーです"},
		{"caFile", `{"profiles": {"p": {"baseUrl": "https://x.example.com", "caFile": "/ca.pem", ` + app + `}}}`,
			"profiles.p.caFile: 未知の設定キーです (trust the CA through NODE_EXTRA_CA_CERTS"},
		{"unknown limit", `{"profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `, "limits": {"maxRows": 1}}}}`,
			"profiles.p.limits.maxRows: 未知の設定キーです"},
		{"unknown top-level limit", `{"limits": {"maxRows": 1}, "profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `}}}`,
			"limits.maxRows: 未知の設定キーです"},
		{"maxReadRows over the cap", `{"profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `, "limits": {"maxReadRows": 200001}}}}`,
			"limits.maxReadRows は 1〜200000 の整数で指定してください"},
		{"maxApiCalls not a positive integer", `{"profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `, "limits": {"maxApiCalls": 0}}}}`,
			"limits.maxApiCalls は正の整数で指定してください"},
		{"batchTimeoutSec fraction", `{"profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `, "limits": {"batchTimeoutSec": 1.5}}}}`,
			"limits.batchTimeoutSec は正の整数で指定してください"},
		{"string app id", `{"profiles": {"p": {"baseUrl": "https://x.example.com", "apps": {"A": {"id": "5"}}}}}`,
			"profiles.p.apps.A.id は正の整数で指定してください"},
		{"ten tokens", `{"profiles": {"p": {"baseUrl": "https://x.example.com", "apps": {"A": {"id": 5, "tokens": ["a","b","c","d","e","f","g","h","i","j"]}}}}}`,
			"profiles.p.apps.A.tokens は最大 9 個までです"},
		{"logApp object (old format)", `{"profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `, "logApp": {"name": "A"}}}}`,
			"profiles.p.logApp は論理アプリ名の文字列で指定してください"},
		{"logApp not an app", `{"profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `, "logApp": "LOG"}}}`,
			`profiles.p.logApp "LOG" が profiles.p.apps に定義されていません`},
		{"unset token variable", `{"profiles": {"p": {"baseUrl": "https://x.example.com", "apps": {"A": {"id": 5, "tokens": ["env:KSQL_T_UNSET"]}}}}}`,
			"profiles.p.apps.A.tokens[0]: 環境変数 KSQL_T_UNSET が設定されていません"},
		{"negative retry", `{"profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `, "retry": {"maxDelayMs": -1}}}}`,
			"retry.maxDelayMs は 0 以上の数で指定してください"},
		{"proxy", `{"profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `, "proxy": "http://p:1"}}}`,
			"profiles.p.proxy は現バージョンでは未対応です"},
		{"bad timezone", `{"profiles": {"p": {"baseUrl": "https://x.example.com", ` + app + `, "timezone": "Mars/Base"}}}`,
			"profiles.p.timezone が IANA タイムゾーン名として不正です: Mars/Base"},
		{"extends cycle", `{"profiles": {"p": {"extends": "q", "baseUrl": "https://x.example.com"}, "q": {"extends": "p"}}}`,
			"profiles.p: extends が循環しています"},
		{"no baseUrl", `{"profiles": {"p": {` + app + `}}}`, "profiles.p.baseUrl が必要です"},
		{"no profiles", `{"profile": {}}`, "設定ファイルに profiles がありません"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadConfig(writeCfg(t, c.body), "p")
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := LoadConfig(writeCfg(t, `{"profiles": {"p": {"baseUrl": "https://x.example.com"}}}`), "")
	assert.ErrorContains(t, err, "プロファイルが指定されていません")
}

// describe-profile without --profile/--config is refused, as in the real.
func TestDescribeProfileNeedsExplicitProfileAndConfig(t *testing.T) {
	code, out, errOut := invoke("describe-profile", "--profile", "p", "--json")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "describe-profile には --profile <p> と --config <path> が必要です")
}

// The example config loads in the stand-in only with every token variable set: the real
// resolves env:NAME at load (config.js resolveEnvRef), so describe-profile fails without.
func TestLoadConfigResolvesTokensAtLoad(t *testing.T) {
	for _, v := range []string{"KSQL_FLOW_CUSTOMERS_API_TOKEN", "KSQL_FLOW_DEALS_API_TOKEN", "KSQL_FLOW_CSV_API_TOKEN", "KSQL_FLOW_LOG_WRITE_API_TOKEN"} {
		t.Setenv(v, "")
	}
	_, err := LoadConfig(filepath.Join(pkgDir, "testdata", "config.example.json"), "sandbox")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "が設定されていません")
}
