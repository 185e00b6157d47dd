package apicount

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCounterCountsPerAppAndMethodConcurrently(t *testing.T) {
	run := New()
	sc := run.Child()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc.Add("7", "get", 200)
			if i%10 == 0 {
				sc.Add("7", "PUT", 429)
			}
		}()
	}
	wg.Wait()
	run.Add("", "GET", 0)

	want := Snapshot{"7": {Requests: 55, ByMethod: map[string]int64{"GET": 50, "PUT": 5}, ByOrigin: harness(55), Throttled: 5}}
	assert.Equal(t, want, sc.Snapshot())
	runWant := Snapshot{"7": want["7"], NoApp: {Requests: 1, ByMethod: map[string]int64{"GET": 1}, ByOrigin: harness(1)}}
	assert.Equal(t, runWant, run.Snapshot(), "the child's requests count in the run too")
	assert.Equal(t, int64(56), run.Snapshot().Total())
	assert.Equal(t, []string{NoApp, "7"}, run.Snapshot().Apps())

	var none *Counter
	none.Add("7", "GET", 200)
	assert.Equal(t, Snapshot{}, none.Snapshot(), "a nil counter counts nothing")
	none.Child().Add("7", "GET", 200) // a child of nil counts on its own, without panicking
}

func harness(n int64) map[string]int64 { return map[string]int64{Harness: n} }

// Each request counts under its origin: the harness's own through Add, a proxy's through
// From; the origins of an app sum to its requests, in the scenario's counter and the run's.
func TestCounterSplitsRequestsByOrigin(t *testing.T) {
	run := New()
	sc := run.Child()
	flownet, ksql := sc.From(FlowNet), sc.From(KsqlFlow)
	sc.Add("7", "GET", 200)
	flownet.Add("7", "PUT", 200)
	flownet.Add("7", "GET", 0)
	ksql.Add("7", "GET", 200)
	ksql.Add("9", "POST", 429)

	want := Snapshot{
		"7": {Requests: 4, ByMethod: map[string]int64{"GET": 3, "PUT": 1}, ByOrigin: map[string]int64{Harness: 1, FlowNet: 2, KsqlFlow: 1}},
		"9": {Requests: 1, ByMethod: map[string]int64{"POST": 1}, ByOrigin: map[string]int64{KsqlFlow: 1}, Throttled: 1},
	}
	assert.Equal(t, want, sc.Snapshot())
	assert.Equal(t, want, run.Snapshot())

	// Arithmetic keeps the split; an origin with nothing left is dropped.
	before := Snapshot{"7": {Requests: 2, ByMethod: map[string]int64{"GET": 1, "PUT": 1}, ByOrigin: map[string]int64{Harness: 1, FlowNet: 1}}}
	assert.Equal(t, Snapshot{
		"7": {Requests: 2, ByMethod: map[string]int64{"GET": 2}, ByOrigin: map[string]int64{FlowNet: 1, KsqlFlow: 1}},
		"9": want["9"],
	}, want.Minus(before))
	assert.Equal(t, want, want.Minus(before).Plus(before))
	renamed := want.Renamed(map[string]string{"7": "state"}, "other")
	assert.Equal(t, want["7"].ByOrigin, renamed["state"].ByOrigin)

	data, err := json.Marshal(Snapshot{"state": want["7"]})
	require.NoError(t, err)
	assert.JSONEq(t, `{"state":{"requests":4,"by_method":{"GET":3,"PUT":1},"by_origin":{"harness":1,"flownet":2,"ksql-flow":1}}}`, string(data))

	var none *Counter
	none.From(KsqlFlow).Add("7", "GET", 200) // the origin of a nil counter counts nothing
	assert.Equal(t, Snapshot{}, none.Snapshot())
}

func TestSnapshotArithmeticAndRenaming(t *testing.T) {
	before := Snapshot{"7": {Requests: 2, ByMethod: map[string]int64{"GET": 2}}}
	after := Snapshot{"7": {Requests: 5, ByMethod: map[string]int64{"GET": 3, "POST": 2}, Throttled: 1},
		"9": {Requests: 1, ByMethod: map[string]int64{"DELETE": 1}}}
	delta := after.Minus(before)
	assert.Equal(t, Snapshot{"7": {Requests: 3, ByMethod: map[string]int64{"GET": 1, "POST": 2}, Throttled: 1},
		"9": {Requests: 1, ByMethod: map[string]int64{"DELETE": 1}}}, delta)
	assert.Equal(t, after, delta.Plus(before))
	assert.Equal(t, Snapshot{}, before.Minus(before), "nothing new: no apps")

	named := after.Plus(Snapshot{"11": {Requests: 1, ByMethod: map[string]int64{"GET": 1}}}).Renamed(map[string]string{"7": "state"}, "other")
	assert.Equal(t, Snapshot{"state": after["7"], "other": {Requests: 2, ByMethod: map[string]int64{"DELETE": 1, "GET": 1}}}, named)

	data, err := json.Marshal(Snapshot{"state": {Requests: 1, ByMethod: map[string]int64{"GET": 1}}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"state":{"requests":1,"by_method":{"GET":1}}}`, string(data))
}

// The transport counts every request it sends, on the app each names, whatever the answer.
func TestTransportCountsTheAppOfEveryRequest(t *testing.T) {
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if r.URL.Query().Get("busy") != "" {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	c := New()
	hc := &http.Client{Transport: Transport(nil, c, map[string]string{"12": "tok-a,tok-b"})}
	send := func(method, path, body string, header ...string) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, srv.URL+path, rd)
		require.NoError(t, err)
		if body != "" && !strings.HasPrefix(body, "--") {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := hc.Do(req)
		require.NoError(t, err)
		res.Body.Close()
	}
	send("GET", "/k/v1/records.json?app=3", "")
	send("GET", "/k/v1/records.json?app=3&busy=1", "")
	send("PUT", "/k/v1/record.json", `{"app":"4","id":"1","record":{}}`)
	send("POST", "/k/v1/records.json", `{"app":4,"records":[]}`, "X-HTTP-Method-Override", "GET")
	send("POST", "/k/v1/bulkRequest.json", `{"requests":[{"method":"POST","api":"/k/v1/record.json","payload":{"app":"5","record":{}}}]}`)
	send("GET", "/k/v1/app.json?id=6", "")
	send("POST", "/k/v1/file.json", "--multipart--", "X-Cybozu-API-Token", "tok-b")
	send("GET", "/k/v1/nothing.json", "")

	assert.Equal(t, Snapshot{
		"3":   {Requests: 2, ByMethod: map[string]int64{"GET": 2}, ByOrigin: harness(2), Throttled: 1},
		"4":   {Requests: 2, ByMethod: map[string]int64{"PUT": 1, "GET": 1}, ByOrigin: harness(2)},
		"5":   {Requests: 1, ByMethod: map[string]int64{"POST": 1}, ByOrigin: harness(1)},
		"6":   {Requests: 1, ByMethod: map[string]int64{"GET": 1}, ByOrigin: harness(1)},
		"12":  {Requests: 1, ByMethod: map[string]int64{"POST": 1}, ByOrigin: harness(1)},
		NoApp: {Requests: 1, ByMethod: map[string]int64{"GET": 1}, ByOrigin: harness(1)},
	}, c.Snapshot())
	assert.Equal(t, `{"app":"4","id":"1","record":{}}`, bodies[2], "the body still reaches the server whole")

	// A request that gets no answer still counts: it may have reached the tenant.
	dead := &http.Client{Transport: Transport(nil, c, nil)}
	_, err := dead.Get("http://127.0.0.1:1/k/v1/records.json?app=3")
	require.Error(t, err)
	assert.Equal(t, int64(3), c.Snapshot()["3"].Requests)
}

// A run-wide client counts what it sends for a scenario on that scenario's counter (carried
// by the request's context), and so also on the run's; without one, on its own.
func TestTransportCountsOnTheCounterOfTheContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	run := New()
	scenarioCounter := run.Child()
	hc := &http.Client{Transport: Transport(nil, run, nil)}
	get := func(ctx context.Context) {
		req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/k/v1/records.json?app=3", nil)
		require.NoError(t, err)
		res, err := hc.Do(req)
		require.NoError(t, err)
		res.Body.Close()
	}
	get(NewContext(context.Background(), scenarioCounter))
	get(context.Background())
	get(NewContext(context.Background(), nil)) // no counter in the context: the client's own

	assert.Equal(t, int64(1), scenarioCounter.Snapshot()["3"].Requests)
	assert.Equal(t, int64(3), run.Snapshot()["3"].Requests)
	assert.Nil(t, FromContext(context.Background()))
}

// A proxy reads the app of the request it received and forwards the body untouched.
func TestAppOfServerRequestPutsTheBodyBack(t *testing.T) {
	body := `{"app":"8","record":{"a":{"value":"` + strings.Repeat("x", maxBodyPeek) + `"}}}`
	r := httptest.NewRequest("POST", "/k/v1/record.json", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json; charset=utf-8")
	assert.Equal(t, "", AppOf(r, nil), "a body longer than the peek does not parse: no app")
	rest, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	assert.Equal(t, body, string(rest), "the whole body is still there")

	small := httptest.NewRequest("DELETE", "/k/v1/records.json", bytes.NewReader([]byte(`{"app": 8, "ids": [1]}`)))
	small.Header.Set("Content-Type", "application/json")
	assert.Equal(t, "8", AppOf(small, nil))
	rest, err = io.ReadAll(small.Body)
	require.NoError(t, err)
	assert.Equal(t, `{"app": 8, "ids": [1]}`, string(rest))
}
