package rehearse

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// rehearsal.json passes the redactor it is given (issue 42: every file flowtest writes): a
// problem line quoting a live run's output keeps no secret, and the file stays JSON.
func TestSaveRedacts(t *testing.T) {
	const token = "Op3rator-T0ken-5e4d3c2b1a"
	rep := &Report{Verdict: "FAIL", dir: t.TempDir(), Tenants: []Outcome{{Tenant: "t1", ExitCode: 1,
		Problems: []string{"exit 1: writer token " + token + " refused"}}}}
	path, err := rep.Save(redact.New(map[string]string{"KINTONE_TOKEN": token}, nil).JSON)
	require.NoError(t, err)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), token)
	var back Report
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, []string{"exit 1: writer token [REDACTED:KINTONE_TOKEN] refused"}, back.Tenants[0].Problems)
	assert.Equal(t, "FAIL", back.Verdict)
}
