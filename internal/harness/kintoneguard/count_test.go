package kintoneguard

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// The guarded client counts every request it sends: reads, the guard's own reads before a
// write, and the write; a refused write sends and counts nothing.
func TestGuardedClientCountsItsRequests(t *testing.T) {
	_, f := newFixture(t)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	api := kintoneapi.New(srv.URL, srv.Client(), map[string]string{})
	run := apicount.New()
	sc := run.Child()
	c, err := New(api, Apps{State: appState, Audit: appAudit, Request: appReq, Log: appLog, CSV: appCSV}, scope, Options{Counter: sc})
	require.NoError(t, err)
	ctx := context.Background()

	_, err = c.GetRecords(ctx, appLog, "", nil)
	require.NoError(t, err)
	_, err = c.UpdateRecord(ctx, appReq, "1", rec(map[string]any{"request_state": "DONE"}), "")
	require.NoError(t, err)
	_, _, err = c.AddRecord(ctx, appLog, rec(map[string]any{"x": "y"}))
	require.True(t, IsRefused(err))

	want := apicount.Snapshot{
		appLog: {Requests: 1, ByMethod: map[string]int64{"GET": 1}, ByOrigin: map[string]int64{apicount.Harness: 1}},
		appReq: {Requests: 2, ByMethod: map[string]int64{"GET": 1, "PUT": 1}, ByOrigin: map[string]int64{apicount.Harness: 2}},
	}
	assert.Equal(t, want, sc.Snapshot())
	assert.Equal(t, want, run.Snapshot())
	assert.Equal(t, 1, f.writeCount())

	// The API client handed in is not changed: its own requests are not counted.
	_, err = api.GetRecords(ctx, appLog, "", nil)
	require.NoError(t, err)
	assert.Equal(t, int64(3), sc.Snapshot().Total())

	// Counted is the same counting for a client used outside the guard (a read-only reader).
	reader := Counted(api, sc)
	_, err = reader.GetRecord(ctx, appReq, "50")
	require.NoError(t, err)
	assert.Equal(t, int64(3), sc.Snapshot()[appReq].Requests)
	assert.Same(t, api, Counted(api, nil), "no counter: the client as it is")
}
