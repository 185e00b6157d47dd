package ksqlprofile

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// operatorConfig is in the real kSQL-Flow 0.9.0 format (plus a key the copy must carry
// through untouched, whatever it is).
const operatorConfig = `{
  "profiles": {
    "e2e": {
      "baseUrl": "https://tenant.example.cybozu.com",
      "timezone": "Asia/Tokyo",
      "apps": {"顧客管理": {"id": 105, "tokens": ["env:CUSTOMERS_TOKEN"]},
               "案件管理": {"id": 106, "tokens": ["env:DEALS_TOKEN", "env:DEALS_TOKEN_2"]},
               "JOB_LOG": {"id": 104, "tokens": ["env:LOG_TOKEN"]}},
      "logApp": "JOB_LOG",
      "limits": {"maxApiCalls": 10000, "batchTimeoutSec": 3600},
      "httpTimeoutMs": 60000,
      "vendorKey": {"nested": [1, 2.50, "x"]}
    },
    "other": {"baseUrl": "https://other.example.com", "apps": {}}
  }
}`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// The copy differs from the operator's config in the profile's baseUrl only: no key added
// (the proxies once added caFile), none dropped, numbers kept as written.
func TestCopyChangesOnlyTheProfilesBaseURL(t *testing.T) {
	orig := writeFile(t, "config.json", operatorConfig)
	cp := filepath.Join(t.TempDir(), "copy.json")
	require.NoError(t, WriteBaseURLCopy(orig, cp, "e2e", "https://127.0.0.1:4443"))
	changed, err := ChangedKeys(orig, cp)
	require.NoError(t, err)
	assert.Equal(t, []string{DocumentedChange("e2e")}, changed)
	data, err := os.ReadFile(cp)
	require.NoError(t, err)
	assert.Contains(t, string(data), `2.50`, "a number is copied as written")

	require.Error(t, WriteBaseURLCopy(orig, cp, "nope", "https://127.0.0.1:4443"))
}

// ChangedKeys sees an added key, a removed one and a changed nested value: the comparison
// cannot pass by looking at nothing.
func TestChangedKeysSeesEveryDifference(t *testing.T) {
	orig := writeFile(t, "a.json", `{"profiles":{"p":{"baseUrl":"u","apps":{"x":{"id":1}},"gone":1}}}`)
	other := writeFile(t, "b.json", `{"profiles":{"p":{"baseUrl":"u","apps":{"x":{"id":2}},"caFile":"/ca.pem"}}}`)
	changed, err := ChangedKeys(orig, other)
	require.NoError(t, err)
	assert.Equal(t, []string{"profiles.p.apps.x.id", "profiles.p.caFile", "profiles.p.gone"}, changed)
}

func TestParseTheContractsDescription(t *testing.T) {
	out := "a warning first\n" + `{"formatVersion":1,"kind":"PROFILE_DESCRIPTION","profile":"e2e","baseUrl":"https://t.example.com","guestSpaceId":null,"timezone":"Asia/Tokyo","apps":{"顧客管理":105,"案件管理":106,"JOB_LOG":104},"logApp":{"name":"JOB_LOG","appId":104},"limits":{"maxApiCalls":10000},"retry":{"maxAttempts":1},"httpTimeoutMs":30000}` + "\n"
	d, err := Parse([]byte(out))
	require.NoError(t, err)
	assert.Equal(t, "e2e", d.Profile)
	assert.Equal(t, "https://t.example.com", d.BaseURL)
	assert.Equal(t, map[string]string{"顧客管理": "105", "案件管理": "106", "JOB_LOG": "104"}, d.Apps)
	assert.Equal(t, "104", d.LogAppID)
	bound, err := d.HoldBound(10 * time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 27*time.Second, bound, "a tenth below the 30 s request timeout")
	bound, err = d.HoldBound(5 * time.Second)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, bound, "never more than the caller's own bound")

	// A string app id is what the real FlowNet refuses (KSQL_FLOW_OUTPUT_INVALID): so do we.
	_, err = Parse([]byte(`{"kind":"PROFILE_DESCRIPTION","baseUrl":"https://t","apps":{"顧客管理":"105"}}`))
	assert.ErrorContains(t, err, "apps.顧客管理")
	_, err = Parse([]byte(`{"kind":"PROFILE_DESCRIPTION","baseUrl":"https://t","apps":{},"logApp":{"name":"L","appId":"104"}}`))
	assert.ErrorContains(t, err, "logApp.appId")

	_, err = Parse([]byte(`{"kind":"CAPABILITIES"}`))
	require.Error(t, err)
	noTimeout, err := Parse([]byte(`{"kind":"PROFILE_DESCRIPTION","baseUrl":"https://t"}`))
	require.NoError(t, err)
	_, err = noTimeout.HoldBound(time.Minute)
	require.Error(t, err, "no httpTimeoutMs: no bound to hold below")
}

func TestCheckCopyNamesWhatDiffers(t *testing.T) {
	parse := func(s string) *Description {
		d, err := Parse([]byte(s))
		require.NoError(t, err)
		return d
	}
	orig := parse(`{"kind":"PROFILE_DESCRIPTION","baseUrl":"https://t","apps":{"a":1},"httpTimeoutMs":60000}`)
	good := parse(`{"kind":"PROFILE_DESCRIPTION","baseUrl":"https://127.0.0.1:1","apps":{"a":1},"httpTimeoutMs":60000}`)
	require.NoError(t, CheckCopy(orig, good, "https://127.0.0.1:1/"))
	assert.ErrorContains(t, CheckCopy(orig, orig, "https://127.0.0.1:1"), "not the proxy")
	bad := parse(`{"kind":"PROFILE_DESCRIPTION","baseUrl":"https://127.0.0.1:1","apps":{"a":2},"httpTimeoutMs":60000}`)
	assert.ErrorContains(t, CheckCopy(orig, bad, "https://127.0.0.1:1"), "differs from the original's in apps")
}

func TestTokenRefs(t *testing.T) {
	p := writeFile(t, "config.json", operatorConfig)
	names, err := TokenRefs(p, "e2e", "案件管理")
	require.NoError(t, err)
	assert.Equal(t, []string{"DEALS_TOKEN", "DEALS_TOKEN_2"}, names)
	_, err = TokenRefs(p, "other", "案件管理")
	require.Error(t, err)
	old := writeFile(t, "old.json", `{"profiles":{"e2e":{"apps":{"案件管理":{"appId":"106","token":"env:DEALS_TOKEN"}}}}}`)
	_, err = TokenRefs(old, "e2e", "案件管理")
	assert.ErrorContains(t, err, "apps.案件管理.tokens", "the pre-0.9.0 sandbox format has no tokens list")
}

// A proven copy fails when kSQL-Flow describes it as anything but the original with the new
// base URL, and passes when it does.
func TestWriteProvenCopy(t *testing.T) {
	orig := writeFile(t, "config.json", operatorConfig)
	origDesc, err := Parse([]byte(`{"kind":"PROFILE_DESCRIPTION","profile":"e2e","baseUrl":"https://tenant.example.cybozu.com","apps":{"顧客管理":105},"httpTimeoutMs":60000}`))
	require.NoError(t, err)
	describeAs := func(doc string) func(string) (*Description, error) {
		return func(string) (*Description, error) { return Parse([]byte(doc)) }
	}
	cp := filepath.Join(t.TempDir(), "copy.json")
	require.NoError(t, WriteProvenCopy(orig, cp, "e2e", "https://127.0.0.1:4443", origDesc,
		describeAs(`{"kind":"PROFILE_DESCRIPTION","profile":"e2e","baseUrl":"https://127.0.0.1:4443","apps":{"顧客管理":105},"httpTimeoutMs":60000}`)))
	err = WriteProvenCopy(orig, cp, "e2e", "https://127.0.0.1:4443", origDesc,
		describeAs(`{"kind":"PROFILE_DESCRIPTION","profile":"e2e","baseUrl":"https://127.0.0.1:4443","apps":{"顧客管理":105},"httpTimeoutMs":1000}`))
	assert.ErrorContains(t, err, "httpTimeoutMs")
}
