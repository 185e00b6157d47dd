package kintoneguard

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

func TestScopeHead(t *testing.T) {
	h, made, ok := ScopeHead("KSQL_FLOW_TEST_261201103000_ab12_m5_resume_net")
	require.True(t, ok)
	assert.Equal(t, "KSQL_FLOW_TEST_261201103000_ab12", h)
	assert.Equal(t, time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC), made)
	for _, id := range []string{"", "KSQL_FLOW_TEST_8142342d_job", "KSQL_FLOW_TEST_261301103000_ab12_x", "PROD_261201103000_ab12", "KSQL_FLOW_TEST_261201103000_AB12"} {
		_, _, ok := ScopeHead(id)
		assert.False(t, ok, "%q is no scope", id)
	}
}

func TestRequestScopesByReasonPrefix(t *testing.T) {
	f := &fakeKintone{apps: map[string][]map[string]any{appReq: {
		{"$id": "1", "reason": "KSQL_FLOW_TEST_261201103000_ab12_p2_16:stop it"},
		{"$id": "2", "reason": "KSQL_FLOW_TEST_261201103000_ab12_p2_16:and again"},
		{"$id": "3", "reason": "KSQL_FLOW_TEST_261201103000_cd34:no label"},
		{"$id": "4", "reason": "an operator wrote KSQL_FLOW_TEST_261201103000_ab12_p2_16:inside"},
		{"$id": "5", "reason": "KSQL_FLOW_TEST_261201103000_ab12_p2_16 without the colon"},
	}}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	got, err := RequestScopes(context.Background(), kintoneapi.New(srv.URL, srv.Client(), map[string]string{appReq: "t"}), appReq)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"KSQL_FLOW_TEST_261201103000_ab12_p2_16": 2, "KSQL_FLOW_TEST_261201103000_cd34": 1}, got)
}

func TestHeldLocksAndTheirLease(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)
	recs := []kintoneapi.Record{
		rec(map[string]any{"$id": "1", "record_type": "NETWORK_LOCK", "status": "RUNNING", "lock_key": "N1:a", "lease_expires_at": "2026-12-01T09:59:00Z"}),
		rec(map[string]any{"$id": "2", "record_type": "NETWORK_LOCK", "status": "RUNNING", "lock_key": "N1:b", "lease_expires_at": "2026-12-01T10:00:00Z"}),
		rec(map[string]any{"$id": "3", "record_type": "NETWORK_LOCK", "status": "RUNNING", "lock_key": "N1:c", "lease_expires_at": "garbage"}),
		rec(map[string]any{"$id": "4", "record_type": "NETWORK_LOCK", "status": "SUCCESS", "lock_key": "", "lease_expires_at": "2026-12-01T10:00:00Z"}),
		rec(map[string]any{"$id": "5", "record_type": "NETWORK_RUN", "status": "RUNNING"}),
	}
	held := HeldLocks(recs)
	require.Len(t, held, 3, "a tombstone and a run are no held locks")
	assert.False(t, held[0].Live(now), "lease + 60 s is over")
	assert.True(t, held[1].Live(now), "inside the 60 s allowance")
	assert.True(t, held[2].Live(now), "an unreadable lease counts as live")
}
