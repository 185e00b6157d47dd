package ksqlflow

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// losingTransport forwards the first request with the given method to kintone and then
// drops its response, as a connection reset after the write would.
type losingTransport struct {
	base   http.RoundTripper
	method string
	lost   bool
}

func (l *losingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(r)
	if err == nil && !l.lost && r.Method == l.method {
		l.lost = true
		resp.Body.Close()
		return nil, errors.New("connection reset after the request was sent")
	}
	return resp, err
}

func logConn(t *testing.T, e *emu, method string) (*jobLog, *losingTransport) {
	t.Helper()
	p, err := LoadConfig(e.cfgPath, testProfile)
	require.NoError(t, err)
	c, err := newConn(p, nil, true)
	require.NoError(t, err)
	lt := &losingTransport{base: c.kc.HTTP.Transport, method: method}
	c.kc.HTTP.Transport = lt
	return &jobLog{c: c, app: p.LogApp.AppID}, lt
}

func TestLostInsertResponseIsAdjudicatedByExecutionID(t *testing.T) {
	e := startEmu(t, nil)
	jl, lt := logConn(t, e, http.MethodPost)
	rec := kintoneapi.Values(map[string]any{"record_type": "JOB", "status": "RUNNING", "job_key": "sandbox:lost_job", "execution_id": "exec-lost"})
	id, rev, err := jl.acquire(context.Background(), "sandbox:lost_job", "exec-lost", rec)
	require.NoError(t, err)
	assert.True(t, lt.lost, "the insert response was dropped")
	assert.Equal(t, "1", rev)
	got := mustGet(t, e, id)
	assert.Equal(t, "exec-lost", got.Str("execution_id"))
	assert.Len(t, e.logRecords(t), 1, "no second insert")
}

// failingPost fails every POST before it is sent: the insert certainly did not land.
type failingPost struct{ base http.RoundTripper }

func (f failingPost) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		return nil, errors.New("connection refused (test)")
	}
	return f.base.RoundTrip(r)
}

// A row whose execution_id extends ours is a token match of `execution_id = ours`, not our
// insert: adjudication keeps exact matches only and reports the lock unavailable.
func TestLostInsertIsNotAdjudicatedByATokenMatch(t *testing.T) {
	e := startEmu(t, nil)
	_, _, err := e.admin.AddRecord(context.Background(), e.apps["log"].ID, kintoneapi.Values(map[string]any{
		"record_type": "JOB", "status": "SUCCESS", "execution_id": "exec-gone_trial2"}))
	require.NoError(t, err)
	jl, _ := logConn(t, e, http.MethodPost)
	jl.c.kc.HTTP.Transport = failingPost{base: jl.c.kc.HTTP.Transport}
	rec := kintoneapi.Values(map[string]any{"record_type": "JOB", "status": "RUNNING", "job_key": "sandbox:gone_job", "execution_id": "exec-gone"})
	_, _, err = jl.acquire(context.Background(), "sandbox:gone_job", "exec-gone", rec)
	var lu *lockUnavailableError
	require.ErrorAs(t, err, &lu, "the other execution's row must not be taken for ours")
	assert.Len(t, e.logRecords(t), 1)
}

func TestLostMarkerResponseIsAdjudicatedAtMinutePrecision(t *testing.T) {
	e := startEmu(t, nil)
	id := holdJobKey(t, e, "sandbox:marker_job")
	before := mustGet(t, e, id)
	jl, lt := logConn(t, e, http.MethodPut)
	now := time.Now()
	rev, err := jl.markStarted(context.Background(), id, before.Revision(), now)
	require.NoError(t, err)
	assert.True(t, lt.lost)
	after := mustGet(t, e, id)
	assert.Equal(t, after.Revision(), rev)
	assert.True(t, sameMinute(after.Str("runner_execution_started_at"), now))

	// A stale expected revision is not a lost response: it fails closed.
	_, err = jl.markStarted(context.Background(), id, before.Revision(), now)
	var lu *lockUnavailableError
	require.ErrorAs(t, err, &lu)
}

func TestUniqueViolationWithoutHolderRetriesOnce(t *testing.T) {
	e := startEmu(t, nil)
	p, err := LoadConfig(e.cfgPath, testProfile)
	require.NoError(t, err)
	c, err := newConn(p, nil, true)
	require.NoError(t, err)
	jl := &jobLog{c: c, app: p.LogApp.AppID}
	id := holdJobKey(t, e, "sandbox:flip_job")
	// The holder finishes between our failed insert and our re-read: release it just
	// before the re-read (the first GET after the POST).
	c.kc.HTTP.Transport = &racingGet{base: c.kc.HTTP.Transport, before: func() {
		_, err := e.admin.UpdateRecord(context.Background(), e.apps["log"].ID, id, kintoneapi.Values(map[string]any{"job_key": "", "status": "SUCCESS"}), "")
		require.NoError(t, err)
	}}
	newID, _, err := jl.acquire(context.Background(), "sandbox:flip_job", "exec-flip",
		kintoneapi.Values(map[string]any{"status": "RUNNING", "job_key": "sandbox:flip_job", "execution_id": "exec-flip"}))
	require.NoError(t, err)
	assert.NotEqual(t, id, newID)
}

type racingGet struct {
	base   http.RoundTripper
	before func()
	posted bool
	done   bool
}

func (r *racingGet) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost {
		r.posted = true
	} else if req.Method == http.MethodGet && r.posted && !r.done {
		r.done = true
		r.before()
	}
	return r.base.RoundTrip(req)
}
