package preflight

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// recordsByQuery is a recordReader that answers each query with fixed records, as kintone
// would answer a looser match: the check must filter them exactly itself.
type recordsByQuery map[string][]kintoneapi.Record

func (q recordsByQuery) GetAll(_ context.Context, app, cond string, _ []string) ([]kintoneapi.Record, error) {
	return q[app+" "+cond], nil
}

func TestFindTenantActivityRule(t *testing.T) {
	now := time.Date(2026, 12, 1, 6, 30, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	rec := func(kv map[string]any) kintoneapi.Record { return kintoneapi.Values(kv) }
	const (
		locks = `1 record_type in ("NETWORK_LOCK") and status in ("RUNNING")`
		runs  = `1 record_type in ("NETWORK_RUN") and status in ("RUNNING")`
		invs  = `2 record_type in ("RUN_INVOCATION") and status in ("RUNNING")`
	)
	cases := []struct {
		name string
		q    recordsByQuery
		want []string // descriptions found, in order; none = no activity
	}{
		{"nothing", recordsByQuery{}, nil},
		{"lease within the 60 s allowance is held", recordsByQuery{locks: {rec(map[string]any{"record_type": "NETWORK_LOCK", "status": "RUNNING", "lock_key": "k", "owner_invocation_id": "invoke_a",
			"heartbeat_at": at(-2 * time.Minute), "lease_expires_at": at(-30 * time.Second)})}},
			[]string{"an unidentified run: held network lock (heartbeat 2m0s ago, lease ends in 30s)"}},
		{"lease past the allowance is not", recordsByQuery{locks: {rec(map[string]any{"record_type": "NETWORK_LOCK", "status": "RUNNING", "lock_key": "k",
			"heartbeat_at": at(-3 * time.Minute), "lease_expires_at": at(-61 * time.Second)})}}, nil},
		{"unreadable lease counts as held", recordsByQuery{locks: {rec(map[string]any{"record_type": "NETWORK_LOCK", "status": "RUNNING", "lock_key": "k", "lease_expires_at": "soon"})}},
			[]string{"an unidentified run: held network lock (heartbeat unknown, lease end unreadable: counted as held)"}},
		{"records a loose query returned are filtered exactly", recordsByQuery{
			locks: {rec(map[string]any{"record_type": "NETWORK_LOCK", "status": "RUNNING ", "lock_key": "k", "lease_expires_at": at(time.Minute)}),
				rec(map[string]any{"record_type": "NETWORK_RUN", "status": "RUNNING", "lock_key": "k", "lease_expires_at": at(time.Minute)})},
			runs: {rec(map[string]any{"record_type": "NETWORK_RUN", "status": "SUCCESS", "network_id": "KSQL_FLOW_TEST_251201062900_00ff_x", "updated_at": at(0)})}}, nil},
		{"a run names its scope; a non-test network is named as such", recordsByQuery{
			runs: {rec(map[string]any{"record_type": "NETWORK_RUN", "status": "RUNNING", "run_id": "netrun_a", "network_id": "KSQL_FLOW_TEST_251201062900_00ff_m5_x", "updated_at": at(-4 * time.Minute)}),
				rec(map[string]any{"record_type": "NETWORK_RUN", "status": "RUNNING", "run_id": "netrun_b", "network_id": "monthly", "updated_at": at(-time.Minute)}),
				rec(map[string]any{"record_type": "NETWORK_RUN", "status": "RUNNING", "run_id": "netrun_c", "network_id": "KSQL_FLOW_TEST_251201062900_00ff_m5_y", "updated_at": at(-6 * time.Minute)})},
			invs: {rec(map[string]any{"record_type": "RUN_INVOCATION", "status": "RUNNING", "invocation_id": "invoke_b", "run_id": "netrun_b", "started_at": at(-2 * time.Minute)})}},
			[]string{"network monthly (not a KSQL_FLOW_TEST_ scope: someone else is using the E2E apps): RUNNING network run (updated 1m0s ago)",
				"network monthly (not a KSQL_FLOW_TEST_ scope: someone else is using the E2E apps): RUNNING invocation (started 2m0s ago)",
				"scope KSQL_FLOW_TEST_251201062900_00ff: RUNNING network run (updated 4m0s ago)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found, err := findTenantActivity(context.Background(), c.q, "1", "2", now)
			require.NoError(t, err)
			var got []string
			for _, f := range found {
				got = append(got, f.Scope+": "+f.What)
			}
			assert.Equal(t, c.want, got)
		})
	}
}
