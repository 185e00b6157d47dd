package flownet

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockTombstones returns the released NETWORK_LOCK records (LOCKDONE:…).
func (s *sandbox) lockTombstones() []recordSummary {
	var out []recordSummary
	for _, r := range s.all("state", `record_type in ("NETWORK_LOCK")`) {
		if strings.HasPrefix(r.Str("record_key"), "LOCKDONE:") {
			out = append(out, recordSummary{r.Str("status"), r.Str("status_reason")})
		}
	}
	return out
}

type recordSummary struct{ status, reason string }

// An ensure-run rejection inside the lock releases it as FAILED / ENSURE_RUN_FAILED
// (§1.3.1); the specific code is what the command reports.
func TestAdmissionRejectionReleasesLockAsEnsureRunFailed(t *testing.T) {
	s := newSandbox(t, nil)
	net := s.network("network-success.yaml")

	r := s.flownet("run-network", net, "--resume-run", "netrun_missing", "--json")
	require.Equal(t, 1, r.code)
	assert.Equal(t, "RUN_NOT_FOUND", decodeRunJSON(t, r.stdout).InvocationResultCode)
	assert.Equal(t, []recordSummary{{"FAILED", "ENSURE_RUN_FAILED"}}, s.lockTombstones())
	assert.Empty(t, s.runningLocks())
}

// A profile description without a timezone is refused as PROFILE_DESCRIPTION_INVALID
// (§1.3.1, §7 "FlowNet requires non-null timezone"): an ensure-run preflight problem, no Run.
func TestProfileWithoutTimezoneIsProfileDescriptionInvalid(t *testing.T) {
	s := newSandbox(t, nil)
	var cfgPath string
	for _, kv := range s.environ {
		if v, ok := strings.CutPrefix(kv, "KSQL_FLOW_CONFIG="); ok {
			cfgPath = v
		}
	}
	raw, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(raw, &cfg))
	delete(cfg["profiles"].(map[string]any)[testProfile].(map[string]any), "timezone")
	noTZ := filepath.Join(t.TempDir(), "no-timezone.json")
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(noTZ, b, 0o600))

	r := s.flownet("run-network", s.network("network-success.yaml"), "--business-key", "k", "--ksql-flow-config", noTZ, "--json")
	require.Equal(t, 1, r.code)
	o := decodeRunJSON(t, r.stdout)
	assert.Equal(t, []string{"REJECTED", "PROFILE_DESCRIPTION_INVALID"}, []string{o.Outcome, o.InvocationResultCode})
	assert.Contains(t, r.stderr, "Error [PROFILE_DESCRIPTION_INVALID]: ")
	assert.Empty(t, s.all("state", `record_type in ("NETWORK_RUN")`))
	assert.Equal(t, []recordSummary{{"FAILED", "ENSURE_RUN_FAILED"}}, s.lockTombstones())
}
