// Package archivetest makes small real archives for the tests of the packages that read
// archives (pack, evidence): a redactor with secrets and app ids, a scenario that holds them,
// a finished archive of two scenarios. Only tests import it.
package archivetest

import (
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/stretchr/testify/require"
)

// Token and Secret are the secrets Redactor knows.
const (
	Token  = "Zm9vYmFyLXRva2VuLTAxMjM0NTY3ODk"
	Secret = "p@ss word/with+chars"
)

// Redactor knows Token, Secret and the four app ids of the sandbox by role.
func Redactor() *redact.Redactor {
	return redact.New(map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": Token, "KSQL_DB_PASSWORD": Secret},
		map[string]string{"4257": "state", "4258": "audit", "4260": "request", "4264": "log"})
}

// Scenario is a record of one scenario of the p2-16 series (acceptance 2) whose step error,
// assertion and process argv hold the token and app id 4257, so that an archive of it is
// only clean if it was redacted.
func Scenario(id, status string) *results.Scenario {
	start := time.Date(2026, 11, 29, 10, 11, 29, 0, time.UTC)
	ok := status == results.StatusPassed
	step := results.Step{Keyword: "Then ", Text: "exactly one NETWORK_RUN exists", Status: "passed", DurationMS: 700}
	if !ok {
		step.Status, step.Error = "failed", "GET /k/v1/records.json?app=4257 with token "+Token+" returned 2 records"
	}
	return &results.Scenario{
		ID: id, Name: "cancel and claim race", Feature: "P2-16 requests", FeatureFile: "features/p2-16/" + id + ".feature", Line: 3,
		Series: "p2-16", Tags: []string{"@" + id, "@p2-16", "@acc-2"}, Status: status,
		Start: start, End: start.Add(1500 * time.Millisecond), Steps: []results.Step{step},
		Assertions: []results.Assertion{{What: "NETWORK_RUN count in app=4257", Expected: "1", Seen: "2", OK: ok}},
		Processes: []results.Process{{Name: "flownet run-network", Argv: []string{"flownet", "run-network", "--app", "4257", "--api-token", Token},
			StderrTail: "password " + Secret}},
		Cleanup: results.Cleanup{OK: true},
	}
}

// Finished writes a small real archive (two scenarios, reports, index.html).
func Finished(t testing.TB) string {
	t.Helper()
	a, err := results.Create(t.TempDir(), "p2-16", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Redactor())
	require.NoError(t, err)
	require.NoError(t, a.WriteScenario(Scenario("p2-16-01", results.StatusPassed)))
	require.NoError(t, a.WriteScenario(Scenario("p2-16-02", results.StatusFailed)))
	require.NoError(t, a.Finish(&results.Run{Target: "sandbox", End: time.Now(), RunOrder: []string{"p2-16-01", "p2-16-02"}}))
	return a.Dir()
}
