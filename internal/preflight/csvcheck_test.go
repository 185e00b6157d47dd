package preflight

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/safety"
)

func TestCSVAppCheck(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ksql.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"profiles":{"e2e":{"apps":{"顧客管理":{"appId":"105"},"KSQL_FLOW_TEST_CSV1":{"appId":"107"}}}}}`), 0o600))
	csv := []runner.Item{item("import", true, runner.NeedRequestApp, runner.NeedCSVIO)}

	assert.True(t, CSVAppCheck(safety.TargetLive, []runner.Item{item("p", true)}, "", "e2e", "", os.ReadFile).OK)
	assert.True(t, CSVAppCheck(safety.TargetSandbox, csv, "", "e2e", "", os.ReadFile).OK)
	ok := CSVAppCheck(safety.TargetLive, csv, cfg, "e2e", "107", os.ReadFile)
	assert.True(t, ok.OK, ok.Reason)
	bad := CSVAppCheck(safety.TargetLive, csv, cfg, "e2e", "105", os.ReadFile)
	assert.False(t, bad.OK)
	assert.Contains(t, bad.Reason, "顧客管理")
	assert.False(t, CSVAppCheck(safety.TargetLive, csv, cfg, "prod", "107", os.ReadFile).OK, "unknown profile")
	assert.False(t, CSVAppCheck(safety.TargetLive, csv, cfg, "e2e", "", os.ReadFile).OK, "no CSV app id")
	assert.False(t, CSVAppCheck(safety.TargetLive, csv, filepath.Join(dir, "none"), "e2e", "107", os.ReadFile).OK, "unreadable config")
}
