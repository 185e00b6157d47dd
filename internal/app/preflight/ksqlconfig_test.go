package preflight

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The real kSQL-Flow 0.9.0 format passes; the pre-0.9.0 sandbox format, an unknown limit,
// maxReadRows over its cap and a literal token are each named.
func TestConfigFormatProblems(t *testing.T) {
	real := `{"limits": {"maxApiCalls": 10000}, "profiles": {"e2e": {"baseUrl": "https://t.example.com", "timezone": "Asia/Tokyo",
	  "apps": {"顧客管理": {"id": 105, "tokens": ["env:KSQL_TOKEN_CUSTOMERS"]}, "JOB_LOG": {"id": 104, "tokens": ["env:KSQL_E2E_TOKEN_LOGS"]}},
	  "logApp": "JOB_LOG", "limits": {"maxReadRows": 200000, "maxTempRows": null, "batchTimeoutSec": 3600}}}}`
	assert.Empty(t, configFormatProblems([]byte(real), "e2e"))
	assert.Empty(t, configFormatProblems([]byte("not json"), "e2e"), "left to describe-profile")

	old := `{"formatVersion": 1, "profiles": {"e2e": {"baseUrl": "https://t.example.com", "caFile": "/ca.pem",
	  "apps": {"顧客管理": {"appId": "105", "token": "env:KSQL_TOKEN_CUSTOMERS"}, "案件管理": {"id": "106", "tokens": ["abc123"]}},
	  "logApp": {"name": "JOB_LOG", "appId": "104", "token": "env:KSQL_E2E_TOKEN_LOGS"},
	  "limits": {"maxReadRows": 1000000, "maxRows": 5}}}}`
	assert.Equal(t, []string{
		"formatVersion: the real config has no such key (its loader refuses it)",
		"caFile: not a kSQL-Flow key (the CA reaches kSQL-Flow through FLOWTEST_CA_FILE, as NODE_EXTRA_CA_CERTS)",
		`apps.案件管理.id must be a positive JSON integer`,
		`apps.案件管理.tokens[0] is a literal token: write env:NAME`,
		`apps.顧客管理: write {"id": <integer>, "tokens": ["env:NAME"]}, not appId/token`,
		`logApp: write the logical name of its apps entry ("logApp": "JOB_LOG"), not an object`,
		"profiles.e2e.limits.maxReadRows 1000000 is over the real loader's cap of 200000",
		"profiles.e2e.limits.maxRows: the real loader knows no such limit",
	}, configFormatProblems([]byte(old), "e2e"))
}
