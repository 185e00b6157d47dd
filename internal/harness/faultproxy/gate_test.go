package faultproxy

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdingGate holds every non-GET until told to release it, and reports each answer.
type holdingGate struct {
	arrived  chan GateRequest
	release  chan error
	answered chan int
}

func newHoldingGate() *holdingGate {
	return &holdingGate{arrived: make(chan GateRequest, 8), release: make(chan error), answered: make(chan int, 8)}
}

func (g *holdingGate) Begin(ctx context.Context, r GateRequest) (func(int), error) {
	g.arrived <- r
	done := func(status int) { g.answered <- status }
	if r.Method == "GET" {
		return done, nil
	}
	select {
	case err := <-g.release:
		return done, err
	case <-ctx.Done():
		return done, ctx.Err()
	}
}

func TestGateHoldsAWriteUntilReleasedAndReportsItsAnswer(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u, nil)
	g := newHoldingGate()
	p.SetGate(g)
	c := clientFor(t, p.CAFile())

	// A read passes straight through the gate.
	r := send(c, "GET", p.URL()+"/k/v1/records.json?app=3&id=9", "", nil)
	require.NoError(t, r.err)
	assert.Equal(t, "3", (<-g.arrived).App)
	assert.Equal(t, 200, <-g.answered)

	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json",
		`{"app":3,"updateKey":{"field":"record_key","value":"LOCK:abc"},"revision":"7","record":{"heartbeat_at":{"value":"x"},"record_type":{"value":"NETWORK_LOCK"}}}`, nil)
	got := <-g.arrived
	assert.Equal(t, GateRequest{Method: "PUT", Path: "/k/v1/record.json", App: "3", Fields: []string{"heartbeat_at", "record_type"},
		RecordKey: "LOCK:abc", RecordType: "NETWORK_LOCK", UpdateKey: "record_key", Revision: "7", Heartbeat: true,
		Values: map[string]string{"heartbeat_at": "x", "record_type": "NETWORK_LOCK"}}, got)
	assert.Equal(t, 1, u.hitCount(), "the held write has not reached the upstream")
	g.release <- nil
	require.Equal(t, 200, recv(t, ch).status)
	assert.Equal(t, 200, <-g.answered, "done follows the answer")
	assert.Equal(t, 2, u.hitCount())
}

func TestGateErrorDropsTheWriteAndRemovingTheGatePasses(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u, nil)
	g := newHoldingGate()
	p.SetGate(g)
	c := clientFor(t, p.CAFile())

	ch := sendAsync(c, "POST", p.URL()+"/k/v1/record.json", `{"app":4,"record":{"record_key":{"value":"INV:x"}}}`, nil)
	assert.Equal(t, "INV:x", (<-g.arrived).RecordKey)
	g.release <- errors.New("scenario over")
	requireNetworkError(t, recv(t, ch))
	assert.Zero(t, u.hitCount(), "a dropped write never reaches kintone")
	p.FlushLogs()
	tr := p.Traffic()
	require.Len(t, tr, 1)
	assert.Equal(t, "gate: scenario over", tr[0].Error)

	p.SetGate(nil)
	r := send(c, "POST", p.URL()+"/k/v1/record.json", `{"app":4,"record":{}}`, nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)
	assert.Empty(t, g.arrived, "a removed gate sees nothing")
}

func TestGateRequestNamesABulkWriteByItsFirstRecord(t *testing.T) {
	v := &requestView{method: "POST", path: "/k/v1/records.json",
		body: []byte(`{"app":5,"records":[{"record":{"record_key":{"value":"STATE:1"},"record_type":{"value":"NODE_STATE"}}},{"record":{"record_key":{"value":"STATE:2"}}}]}`)}
	app, id, _, fields := v.touched()
	r := v.gateRequest(app, id, fields, false)
	assert.Equal(t, "STATE:1", r.RecordKey)
	assert.Equal(t, "NODE_STATE", r.RecordType)
	assert.Equal(t, "", r.Revision)
}

func TestGateRequestIsWrite(t *testing.T) {
	assert.False(t, GateRequest{Method: "GET"}.IsWrite())
	assert.False(t, GateRequest{Method: "POST", MethodOverride: "get"}.IsWrite(), "a long read sent as POST")
	assert.True(t, GateRequest{Method: "POST"}.IsWrite())
	assert.True(t, GateRequest{Method: "PUT"}.IsWrite())
	assert.True(t, GateRequest{Method: "DELETE"}.IsWrite())
}
