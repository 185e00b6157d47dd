package preflight

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ksqlflow/flowtest/internal/harness/ksqlprofile"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

func TestCSVAppCheck(t *testing.T) {
	// describe-profile of the operator's config, as kSQL-Flow would print it.
	describe := func(conf, profile string) (*ksqlprofile.Description, error) {
		if conf != "ksql.json" || profile != "e2e" {
			return nil, errors.New("profile not found")
		}
		return ksqlprofile.Parse([]byte(`{"kind":"PROFILE_DESCRIPTION","profile":"e2e","baseUrl":"https://t","apps":{"顧客管理":105,"KSQL_FLOW_TEST_CSV1":107}}`))
	}
	csv := []runner.Item{item("import", true, runner.NeedRequestApp, runner.NeedCSVIO)}

	assert.True(t, CSVAppCheck(safety.TargetLive, []runner.Item{item("p", true)}, "", "e2e", "", describe).OK)
	assert.True(t, CSVAppCheck(safety.TargetSandbox, csv, "", "e2e", "", describe).OK)
	ok := CSVAppCheck(safety.TargetLive, csv, "ksql.json", "e2e", "107", describe)
	assert.True(t, ok.OK, ok.Reason)
	bad := CSVAppCheck(safety.TargetLive, csv, "ksql.json", "e2e", "105", describe)
	assert.False(t, bad.OK)
	assert.Contains(t, bad.Reason, "顧客管理", "an app id (a JSON integer, as the real prints it) compares as the configured id")
	assert.False(t, CSVAppCheck(safety.TargetLive, csv, "ksql.json", "prod", "107", describe).OK, "unknown profile")
	assert.False(t, CSVAppCheck(safety.TargetLive, csv, "ksql.json", "e2e", "", describe).OK, "no CSV app id")
	assert.False(t, CSVAppCheck(safety.TargetLive, csv, "none.json", "e2e", "107", describe).OK, "a config that cannot be described")
}
