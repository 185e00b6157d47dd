package flownet

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/emulator"
)

// lossyTransport forwards every request but, for the requests drop selects, throws the
// response away and reports a transport error: the write happened, the client cannot know.
type lossyTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	drop func(*http.Request) bool
}

func (l *lossyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(r)
	l.mu.Lock()
	d := l.drop != nil && l.drop(r)
	if d {
		l.drop = nil // once
	}
	l.mu.Unlock()
	if err == nil && d {
		resp.Body.Close()
		return nil, errors.New("connection reset after the request was sent (test)")
	}
	return resp, err
}

type storeEnv struct {
	srv   *emulator.Server
	st    *store
	lossy *lossyTransport
	admin *kintoneapi.Client
}

func newStoreEnv(t *testing.T, opts emulator.Options) *storeEnv {
	t.Helper()
	srv, err := emulator.Start(context.Background(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	apps := map[string]emulator.AppInfo{}
	for _, a := range srv.Apps() {
		apps[a.Role] = a
	}
	hc, err := kintoneapi.HTTPClientWithCA(srv.CAFile())
	require.NoError(t, err)
	lossy := &lossyTransport{base: hc.Transport}
	hc.Transport = lossy
	tokens := map[string]string{apps["state"].ID: apps["state"].Tokens["flownet"], apps["audit"].ID: apps["audit"].Tokens["flownet"]}
	st := &store{stateApp: apps["state"].ID, auditApp: apps["audit"].ID,
		retryEvery: 10 * time.Millisecond, retryFor: time.Second}
	st.net = watchTransport(hc) // as newStore: the lease monitor sees lossy's failures
	st.kc = kintoneapi.New(srv.BaseURL(), hc, tokens)
	ahc, err := kintoneapi.HTTPClientWithCA(srv.CAFile())
	require.NoError(t, err)
	admin := kintoneapi.New(srv.BaseURL(), ahc, map[string]string{apps["state"].ID: apps["state"].Tokens["full"]})
	return &storeEnv{srv: srv, st: st, lossy: lossy, admin: admin}
}

func isWrite(method string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == method && r.URL.Path == "/k/v1/record.json" }
}

func TestInsertAdjudicatesLostResponse(t *testing.T) {
	e := newStoreEnv(t, emulator.Options{})
	ctx := context.Background()
	e.lossy.drop = isWrite(http.MethodPost)
	id, rev, err := e.st.insert(ctx, e.st.stateApp, "CANCEL:netrun_a", vals(map[string]any{"record_type": "CANCEL_REQUEST", "run_id": "netrun_a"}), "run_id")
	require.NoError(t, err)
	assert.Equal(t, "1", rev)
	recs, err := e.st.find(ctx, e.st.stateApp, `record_key in ("CANCEL:netrun_a")`)
	require.NoError(t, err)
	require.Len(t, recs, 1, "the lost insert is not repeated")
	assert.Equal(t, id, recs[0].ID())

	// Someone else's record under the key: DUPLICATE_RECORD, not success.
	_, _, err = e.st.insert(ctx, e.st.stateApp, "CANCEL:netrun_a", vals(map[string]any{"record_type": "CANCEL_REQUEST", "run_id": "netrun_b"}), "run_id")
	assert.Equal(t, codeDuplicateRecord, errCode(err, ""))

	_, _, err = e.st.insert(ctx, e.st.stateApp, "X:"+string(make([]byte, 64)), vals(map[string]any{"record_type": "CANCEL_REQUEST"}))
	assert.Equal(t, codeUniqueKeyTooLong, errCode(err, ""))
}

func TestUpdateAdjudicatesLostResponseAndConflicts(t *testing.T) {
	e := newStoreEnv(t, emulator.Options{RaceDA02: true})
	ctx := context.Background()
	id, rev, err := e.st.insert(ctx, e.st.stateApp, "CANCEL:netrun_c", vals(map[string]any{"record_type": "CANCEL_REQUEST", "run_id": "netrun_c"}), "run_id")
	require.NoError(t, err)

	e.lossy.drop = isWrite(http.MethodPut)
	rev2, err := e.st.update(ctx, e.st.stateApp, "CANCEL:netrun_c", vals(map[string]any{"status_reason": "x", "updated_at": isoMillis(time.Now())}), rev)
	require.NoError(t, err, "our write landed; the re-read proves it")
	assert.Equal(t, "2", rev2)

	// A stale revision is a conflict, whether kintone says GAIA_CO02 or (racing) GAIA_DA02.
	_, err = e.st.update(ctx, e.st.stateApp, "CANCEL:netrun_c", vals(map[string]any{"status_reason": "y"}), rev)
	assert.Equal(t, codeRevisionConflict, errCode(err, ""))
	got, err := e.st.byID(ctx, e.st.stateApp, id)
	require.NoError(t, err)
	assert.Equal(t, "x", got.Str("status_reason"))
}

func TestNetworkLockHeartbeatFenceAndRelease(t *testing.T) {
	e := newStoreEnv(t, emulator.Options{})
	ctx := context.Background()
	now := time.Now
	e.lossy.drop = isWrite(http.MethodPost) // the acquire's response is lost: adjudicated as ours
	l, err := acquireLock(ctx, e.st, "p", "net", "invoke_1", "local-pid://h/1", 3*time.Second, time.Second/4, now)
	require.NoError(t, err)
	n1, _ := N1Key("p", "net")
	rec, err := e.st.byKey(ctx, e.st.stateApp, "LOCK:"+n1)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, []string{n1, "RUNNING", "invoke_1", "1", "owner_instance_id=local-pid://h/1"},
		[]string{rec.Str("lock_key"), rec.Str("status"), rec.Str("owner_invocation_id"), rec.Str("revision"), rec.Str("status_reason")})

	_, err = acquireLock(ctx, e.st, "p", "net", "invoke_2", "local-pid://h/2", 3*time.Second, time.Second, now)
	assert.Equal(t, codeLockConflict, errCode(err, ""))

	l.startHeartbeat()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec, err = e.st.byKey(ctx, e.st.stateApp, "LOCK:"+n1)
		require.NoError(t, err)
		if atoi(rec.Str("revision")) >= 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no heartbeat advanced the lock; revision %s", rec.Str("revision"))
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, rec.Revision(), rec.Str("revision"), "business revision tracks $revision")
	l.stopHeartbeat()
	rec, err = e.st.byKey(ctx, e.st.stateApp, "LOCK:"+n1)
	require.NoError(t, err)
	before := rec.Revision()
	require.NoError(t, l.tick(ctx))
	rec, err = e.st.byKey(ctx, e.st.stateApp, "LOCK:"+n1)
	require.NoError(t, err)
	assert.Equal(t, atoi(before)+1, atoi(rec.Revision()), "a tick is a heartbeat: the lock's revision moves")

	// Another writer touches the lock (as force-unlock would): the fence fails for good.
	_, err = e.admin.UpdateRecord(ctx, e.st.stateApp, rec.ID(), vals(map[string]any{"heartbeat_at": isoMillis(time.Now())}), "")
	require.NoError(t, err)
	err = l.tick(ctx)
	assert.Equal(t, "LEASE_REVISION_MISMATCH", errCode(err, ""))
	assert.Contains(t, err.Error(), "revision is", "the fence names the revision it saw")
	assert.Equal(t, codeLeaseInterruptedCode, errCode(l.tick(ctx), ""), "once the fence is lost the lease is uncertain for good")
	assert.Error(t, l.release(ctx, StatusSuccess, "OK"), "a lock that is not ours is not released")

	// A clean cycle: acquire, release into the tombstone, acquire again.
	l2, err := acquireLock(ctx, e.st, "p", "net2", "invoke_3", "i", 3*time.Second, time.Second, now)
	require.NoError(t, err)
	l2.startHeartbeat()
	require.NoError(t, l2.release(ctx, StatusFailed, "NODE_FAILED_OR_BLOCKED"))
	n1b, _ := N1Key("p", "net2")
	tomb, err := e.st.byKey(ctx, e.st.stateApp, lockDoneKey(n1b, l2.leaseToken))
	require.NoError(t, err)
	require.NotNil(t, tomb)
	assert.Equal(t, []string{"FAILED", "NODE_FAILED_OR_BLOCKED", "", "", ""},
		[]string{tomb.Str("status"), tomb.Str("status_reason"), tomb.Str("lock_key"), tomb.Str("lease_token"), tomb.Str("owner_invocation_id")})
	_, err = acquireLock(ctx, e.st, "p", "net2", "invoke_4", "i", 3*time.Second, time.Second, now)
	assert.NoError(t, err)
}
