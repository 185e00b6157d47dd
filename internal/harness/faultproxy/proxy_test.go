package faultproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const claimPath = "^/k/v1/record\\.json$"

func claimBarrier(id string, phase Phase) Barrier {
	return Barrier{ID: id, Phase: phase, Match: Match{Path: claimPath, Method: "PUT",
		Body: &BodyMatch{App: "7", ID: "42", Field: "claimed_at"}}}
}

const claimBody = `{"app":7,"id":"42","revision":"1","record":{"claimed_at":{"value":"2026-11-29T00:00:00Z"}}}`

func quiet() context.Context {
	return wait.WithConfig(context.Background(), wait.Config{Progress: os.Stderr})
}

func TestPassForwardsOverHTTPS(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u, nil)
	require.True(t, strings.HasPrefix(p.URL(), "https://127.0.0.1:"))
	c := clientFor(t, p.CAFile())

	r := send(c, "GET", p.URL()+"/k/v1/records.json?app=7&query=limit%20100", "", nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)
	assert.Contains(t, r.body, plantedResponse)

	r = send(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, map[string]string{"X-Want-Status": "409"})
	require.NoError(t, r.err)
	assert.Equal(t, 409, r.status, "non-2xx statuses pass through unchanged")

	hits := u.hitList()
	require.Len(t, hits, 2)
	assert.Equal(t, "app=7&query=limit%20100", hits[0].Query, "the query reaches the upstream intact")
	assert.Equal(t, strings.TrimPrefix(u.srv.URL, "https://"), hits[0].Host)
	assert.Equal(t, claimBody, hits[1].Body)

	cnt := p.Counts()
	assert.Equal(t, 2, cnt.Total)
	assert.Equal(t, map[string]int{"GET": 1, "PUT": 1}, cnt.Records)
	assert.Zero(t, cnt.Blocked)
}

func TestBlockDropsConnectionWithoutResponse(t *testing.T) {
	u, p, c := proxied(t)
	require.NoError(t, p.SetMode(ModeBlock))

	requireNetworkError(t, send(c, "GET", p.URL()+"/k/v1/records.json?app=7", "", nil))
	requireNetworkError(t, send(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil))
	assert.Zero(t, u.hitCount(), "blocked requests never reach kintone")
	assert.Equal(t, 2, p.Counts().Blocked)

	require.NoError(t, p.SetMode(ModePass))
	r := send(c, "GET", p.URL()+"/k/v1/records.json?app=7", "", nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)

	p.FlushLogs()
	lines := readLines(t, p.TrafficLogPath())
	require.Len(t, lines, 3)
	var first struct {
		Blocked, Targeted bool
		Method, Path      string
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	assert.True(t, first.Blocked)
	assert.True(t, first.Targeted)
	assert.Equal(t, "/k/v1/records.json", first.Path)
}

func TestBlockWritesBlocksAllButGET(t *testing.T) {
	u, p, c := proxied(t)
	require.NoError(t, p.SetMode(ModeBlockWrites))

	r := send(c, "GET", p.URL()+"/k/v1/record.json?app=7&id=1", "", nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)
	for _, m := range []string{"PUT", "POST", "DELETE"} {
		requireNetworkError(t, send(c, m, p.URL()+"/k/v1/records.json", `{"app":7}`, nil))
	}
	hits := u.hitList()
	require.Len(t, hits, 1)
	assert.Equal(t, "GET", hits[0].Method)
	assert.Equal(t, 3, p.Counts().Blocked)
	assert.Error(t, p.SetMode("drain"), "unknown modes are refused")
}

func TestModeChangesWhileRequestsFlow(t *testing.T) {
	u, p, c := proxied(t)
	var mu sync.Mutex
	ok, failed := 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				r := send(c, "PUT", p.URL()+"/k/v1/record.json", `{"app":7,"id":1,"record":{}}`, nil)
				mu.Lock()
				if r.err == nil && r.status == 200 {
					ok++
				} else {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	modes := []Mode{ModeBlock, ModePass, ModeBlockWrites, ModePass}
	for i := 0; i < 8; i++ {
		require.NoError(t, p.SetMode(modes[i%len(modes)]))
		before := p.Counts().Total
		require.NoError(t, wait.Until(quiet(), "more traffic", 10*time.Second, time.Millisecond, func(context.Context) (bool, string, error) {
			n := p.Counts().Total
			return n >= before+5 || n >= 150, fmt.Sprintf("total=%d", n), nil
		}))
	}
	wg.Wait()
	cnt := p.Counts()
	assert.Equal(t, 150, cnt.Total)
	assert.Equal(t, 150, ok+failed)
	assert.Equal(t, failed, cnt.Blocked, "every failure is an injected block")
	assert.Equal(t, ok, u.hitCount(), "every success reached the upstream once")
}

func TestBarrierBeforeHoldsUntilReleaseAndFiresOnce(t *testing.T) {
	u, p, c := proxied(t)
	require.NoError(t, p.AddBarrier(claimBarrier("scope_claim_before", PhaseBefore)))
	require.Error(t, p.AddBarrier(claimBarrier("scope_claim_before", PhaseBefore)), "ids are unique per proxy")

	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil)
	a := arrived(t, p, "scope_claim_before")
	assert.Equal(t, PhaseBefore, a.Phase)
	assert.Equal(t, "PUT", a.Method)
	assert.Equal(t, "/k/v1/record.json", a.Path)
	assert.Zero(t, a.ResponseStatus)
	assert.Zero(t, u.hitCount(), "a before barrier holds the request before forwarding")

	// While held, other traffic flows.
	r := send(c, "GET", p.URL()+"/k/v1/records.json", "", nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)

	require.NoError(t, p.Release("scope_claim_before"))
	r = recv(t, ch)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)

	// Fired once: the same request again is not held.
	r = send(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)
	assert.Len(t, p.Arrivals(), 1)
	p.FlushLogs()
	lines := readLines(t, p.ArrivalLogPath())
	require.Len(t, lines, 1)
	var logged map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &logged))
	assert.Equal(t, "scope_claim_before", logged["barrier_id"])
	assert.Equal(t, "before", logged["phase"])
	assert.NotContains(t, logged, "response_status")
	assert.Error(t, p.Release("nope"))
}

func TestBarrierAfterSuccessHoldsResponse(t *testing.T) {
	u, p, c := proxied(t)
	require.NoError(t, p.AddBarrier(claimBarrier("scope_claim_after", PhaseAfterSuccess)))

	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil)
	a := arrived(t, p, "scope_claim_after")
	assert.Equal(t, 200, a.ResponseStatus)
	assert.Equal(t, PhaseAfterSuccess, a.Phase)
	assert.Equal(t, 1, u.hitCount(), "the write reached kintone before the hold")
	select {
	case r := <-ch:
		t.Fatalf("response returned while held: %+v", r)
	default:
	}
	require.NoError(t, p.Release("scope_claim_after"))
	r := recv(t, ch)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)
	assert.Contains(t, r.body, plantedResponse)

	p.FlushLogs()
	lines := readLines(t, p.ArrivalLogPath())
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0], `"response_status":200`)
}

func TestAfterSuccessNon2xxDoesNotConsumeBarrier(t *testing.T) {
	_, p, c := proxied(t)
	require.NoError(t, p.AddBarrier(claimBarrier("hb_after", PhaseAfterSuccess)))

	r := send(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, map[string]string{"X-Want-Status": "409"})
	require.NoError(t, r.err)
	assert.Equal(t, 409, r.status, "a non-2xx response returns at once")
	assert.Empty(t, p.Arrivals())

	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil)
	a := arrived(t, p, "hb_after")
	assert.Equal(t, 200, a.ResponseStatus)
	require.NoError(t, p.Release("hb_after"))
	assert.Equal(t, 200, recv(t, ch).status)
	assert.Len(t, p.Arrivals(), 1)
}

func TestBarrierMatchRules(t *testing.T) {
	full := claimBarrier("b", PhaseBefore)
	// One record named either way: FlowNet writes the Run by updateKey on record_key, a
	// by-id writer names the same record by its $id.
	byKeyOrID := Barrier{ID: "b", Phase: PhaseBefore, Match: Match{Path: claimPath, Method: "PUT", Body: &BodyMatch{App: "9", ID: "5", Key: "R1:abc", Field: "finished_at"}}}
	cases := []struct {
		name   string
		b      Barrier
		method string
		path   string
		body   string
		want   bool
	}{
		{"all conditions hold", full, "PUT", "/k/v1/record.json", claimBody, true},
		{"app as string in body", full, "PUT", "/k/v1/record.json", `{"app":"7","id":42,"record":{"claimed_at":{}}}`, true},
		{"other app", full, "PUT", "/k/v1/record.json", `{"app":8,"id":42,"record":{"claimed_at":{}}}`, false},
		{"other record id", full, "PUT", "/k/v1/record.json", `{"app":7,"id":43,"record":{"claimed_at":{}}}`, false},
		{"field missing", full, "PUT", "/k/v1/record.json", `{"app":7,"id":42,"record":{"status":{}}}`, false},
		{"field only nested deeper", full, "PUT", "/k/v1/record.json", `{"app":7,"id":42,"record":{"x":{"claimed_at":1}}}`, false},
		{"record not an object", full, "PUT", "/k/v1/record.json", `{"app":7,"id":42,"record":"claimed_at"}`, false},
		{"method differs", full, "POST", "/k/v1/record.json", claimBody, false},
		{"path differs", full, "PUT", "/k/v1/records.json", claimBody, false},
		{"non-JSON body with body condition", full, "PUT", "/k/v1/record.json", `claimed_at`, false},
		{"no body with body condition", full, "PUT", "/k/v1/record.json", ``, false},
		{"no body condition, non-JSON body", Barrier{ID: "b", Phase: PhaseBefore, Match: Match{Path: "file"}}, "POST", "/k/v1/file.json", "--multipart--", true},
		{"method match is case-insensitive", Barrier{ID: "b", Phase: PhaseBefore, Match: Match{Path: ".", Method: "put"}}, "PUT", "/x", "", true},
		{"audit finished_at without id", Barrier{ID: "b", Phase: PhaseBefore, Match: Match{Path: claimPath, Method: "PUT", Body: &BodyMatch{App: "9", Field: "finished_at"}}},
			"PUT", "/k/v1/record.json", `{"app":"9","updateKey":{"field":"k","value":"v"},"record":{"finished_at":{"value":"x"}}}`, true},
		{"the record by its updateKey", byKeyOrID, "PUT", "/k/v1/record.json", `{"app":9,"updateKey":{"field":"record_key","value":"R1:abc"},"record":{"finished_at":{}}}`, true},
		{"the record by its id", byKeyOrID, "PUT", "/k/v1/record.json", `{"app":9,"id":"5","record":{"finished_at":{}}}`, true},
		{"another record's updateKey", byKeyOrID, "PUT", "/k/v1/record.json", `{"app":9,"updateKey":{"field":"record_key","value":"R1:xyz"},"record":{"finished_at":{}}}`, false},
		{"another record's id", byKeyOrID, "PUT", "/k/v1/record.json", `{"app":9,"id":6,"record":{"finished_at":{}}}`, false},
		{"a key alone is no id", Barrier{ID: "b", Phase: PhaseBefore, Match: Match{Path: claimPath, Body: &BodyMatch{Key: "R1:abc"}}},
			"PUT", "/k/v1/record.json", `{"app":9,"id":"R1:abc","record":{}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := compile(tc.b)
			require.NoError(t, err)
			v := &requestView{method: tc.method, path: tc.path}
			if tc.body != "" {
				v.body = []byte(tc.body)
			}
			assert.Equal(t, tc.want, c.matches(v))
		})
	}
	for _, bad := range []Barrier{
		{ID: "", Phase: PhaseBefore, Match: Match{Path: "x"}},
		{ID: "b", Phase: "during", Match: Match{Path: "x"}},
		{ID: "b", Phase: PhaseBefore, Match: Match{Path: "("}},
		{ID: "b", Phase: PhaseBefore},
	} {
		_, err := compile(bad)
		assert.Error(t, err, "%+v", bad)
	}
}

// A business read addresses its app in the query string of a GET, or in the body of a
// method-override POST; Match.App finds it in either.
func TestBarrierMatchesTheAppOfARead(t *testing.T) {
	cases := []struct {
		name, method, path, body, query string
		want                            bool
	}{
		{"read app in query", "GET", "/k/v1/records.json", "", "app=5&query=limit+1", true},
		{"read of another app in query", "GET", "/k/v1/records.json", "", "app=6", false},
		{"read app in override body", "POST", "/k/v1/records.json", `{"app":5,"query":"limit 1"}`, "", true},
		{"body app wins over query app", "POST", "/k/v1/records.json", `{"app":6}`, "app=5", false},
		{"read without any app", "GET", "/k/v1/records.json", "", "", false},
		{"path differs", "GET", "/k/v1/record.json", "", "app=5", false},
	}
	c, err := compile(readBarrier)
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := url.ParseQuery(tc.query)
			require.NoError(t, err)
			v := &requestView{method: tc.method, path: tc.path, query: q}
			if tc.body != "" {
				v.body = []byte(tc.body)
			}
			assert.Equal(t, tc.want, c.matches(v))
		})
	}
}

var readBarrier = Barrier{ID: "read", Phase: PhaseBefore, Match: Match{Path: `/k/v1/records\.json$`, App: "5"}}

func TestNonMatchingRequestLeavesBarrierArmed(t *testing.T) {
	_, p, c := proxied(t)
	require.NoError(t, p.AddBarrier(claimBarrier("armed", PhaseBefore)))
	r := send(c, "PUT", p.URL()+"/k/v1/record.json", `{"app":8,"id":"42","record":{"claimed_at":{}}}`, nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)
	assert.Empty(t, p.Arrivals())

	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil)
	arrived(t, p, "armed")
	require.NoError(t, p.Release("armed"))
	assert.Equal(t, 200, recv(t, ch).status)
}

func TestReleaseByFile(t *testing.T) {
	_, p, c := proxied(t)
	rel := filepath.Join(t.TempDir(), "claim.release")
	b := claimBarrier("file_release", PhaseBefore)
	b.Release = rel
	require.NoError(t, p.AddBarrier(b))

	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil)
	arrived(t, p, "file_release")
	require.NoError(t, os.WriteFile(rel, nil, 0o644))
	r := recv(t, ch)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)

	stale := claimBarrier("stale", PhaseBefore)
	stale.Release = rel // exists now
	assert.ErrorContains(t, p.AddBarrier(stale), "already exists")
	relative := claimBarrier("relative", PhaseBefore)
	relative.Release = "x.release"
	assert.ErrorContains(t, p.AddBarrier(relative), "absolute")
}

func TestBarrierTimeoutFailsHeldRequest(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u, func(o *Options) { o.BarrierTimeout = 200 * time.Millisecond })
	c := clientFor(t, p.CAFile())
	require.NoError(t, p.AddBarrier(claimBarrier("never_released", PhaseBefore)))
	require.NoError(t, p.AddBarrier(Barrier{ID: "after_never", Phase: PhaseAfterSuccess, Match: Match{Path: "^/k/v1/records\\.json$"}}))

	requireNetworkError(t, send(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil))
	assert.Zero(t, u.hitCount(), "a timed-out before barrier never forwards")
	requireNetworkError(t, send(c, "GET", p.URL()+"/k/v1/records.json", "", nil))
	assert.Equal(t, 1, u.hitCount(), "an after-success barrier forwarded, then failed the held response")

	assert.Equal(t, 2, p.Counts().BarrierTimeouts)
	p.FlushLogs()
	traffic, err := os.ReadFile(p.TrafficLogPath())
	require.NoError(t, err)
	assert.Contains(t, string(traffic), "barrier never_released: release timed out after 200ms")
	assert.Contains(t, string(traffic), "barrier after_never: release timed out after 200ms")

	// Consumed: the next matching request passes.
	r := send(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.status)
	assert.Len(t, p.Arrivals(), 2)
}

func TestLogsNeverHoldQueryHeadersBodyOrToken(t *testing.T) {
	const (
		token = "PLANTED-TOKEN-5ecret"
		query = "PLANTEDQUERY"
		body  = "PLANTED-BODY-value"
	)
	_, p, c := proxied(t)
	hdr := map[string]string{"X-Cybozu-API-Token": token, "Authorization": "Bearer " + token}
	withBody := `{"app":7,"id":"42","record":{"heartbeat_at":{"value":"` + body + `"},"claimed_at":{"value":"` + body + `"}}}`

	require.NoError(t, send(c, "GET", p.URL()+"/k/v1/records.json?app=7&query="+query, "", hdr).err)
	require.NoError(t, send(c, "PUT", p.URL()+"/k/v1/record.json?token="+token, withBody, hdr).err)
	require.NoError(t, p.AddBarrier(claimBarrier("secret_test", PhaseBefore)))
	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json?q="+query, withBody, hdr)
	arrived(t, p, "secret_test")
	require.NoError(t, p.Release("secret_test"))
	require.NoError(t, recv(t, ch).err)
	require.NoError(t, p.SetMode(ModeBlock))
	requireNetworkError(t, send(c, "POST", p.URL()+"/k/v1/records.json?query="+query, withBody, hdr))

	// An upstream failure: its transport error would name the URL with its query.
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	p2, err := New(Options{Name: "down", Upstream: downURL, LogDir: p.opts.LogDir})
	require.NoError(t, err)
	defer p2.Close()
	requireNetworkError(t, send(clientFor(t), "GET", p2.URL()+"/k/v1/records.json?query="+query, "", hdr))
	assert.Equal(t, 1, p2.Counts().UpstreamErrors)
	require.NoError(t, p.Close())
	require.NoError(t, p2.Close())

	entries, err := os.ReadDir(p.opts.LogDir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(p.opts.LogDir, e.Name()))
		require.NoError(t, err)
		for _, planted := range []string{token, query, body, plantedResponse, "X-Cybozu", "Bearer"} {
			assert.NotContains(t, string(data), planted, "%s leaks %q", e.Name(), planted)
		}
	}
	traffic := readLines(t, p.TrafficLogPath())
	require.Len(t, traffic, 4)
	assert.Contains(t, traffic[1], `"heartbeat":true`)
	assert.Contains(t, traffic[1], `"path":"/k/v1/record.json"`)
	assert.Equal(t, 2, p.Counts().Heartbeat)
}

func TestCountsSplitRecordsFileOtherHeartbeat(t *testing.T) {
	_, p, c := proxied(t)
	send(c, "GET", p.URL()+"/k/v1/records.json?app=1", "", nil)
	send(c, "POST", p.URL()+"/k/v1/record.json", `{"app":1,"record":{}}`, nil)
	send(c, "PUT", p.URL()+"/k/v1/record.json", `{"app":1,"id":1,"record":{"heartbeat_at":{"value":"x"}}}`, nil)
	send(c, "PUT", p.URL()+"/k/v1/records.json", `{"app":1,"records":[]}`, nil)
	send(c, "GET", p.URL()+"/k/guest/3/v1/record.json?app=1&id=1", "", nil) // not the records API path shape
	send(c, "GET", p.URL()+"/k/v1/guest/3/record.json?app=1&id=1", "", nil)
	send(c, "POST", p.URL()+"/k/v1/file.json", "--multipart--", map[string]string{"Content-Type": "multipart/form-data; boundary=x"})
	send(c, "GET", p.URL()+"/k/v1/app/form/fields.json?app=1", "", nil)
	cnt := p.Counts()
	assert.Equal(t, 8, cnt.Total)
	assert.Equal(t, map[string]int{"GET": 2, "POST": 1, "PUT": 2}, cnt.Records)
	assert.Equal(t, 5, cnt.RecordsTotal())
	assert.Equal(t, 1, cnt.File)
	assert.Equal(t, 2, cnt.Other)
	assert.Equal(t, 1, cnt.Heartbeat)
}

func TestControlFileSteersModeAndBarriers(t *testing.T) {
	u := newUpstream(t)
	dir := t.TempDir()
	ctl := filepath.Join(dir, "fault-control.json")
	require.NoError(t, os.WriteFile(ctl, []byte("block\n"), 0o644))
	p := newProxy(t, u, func(o *Options) { o.ControlFile = ctl })
	c := clientFor(t, p.CAFile())
	assert.Equal(t, ModeBlock, p.Mode())
	requireNetworkError(t, send(c, "GET", p.URL()+"/k/v1/records.json", "", nil))

	// In-process change after the file: the last change wins.
	require.NoError(t, p.SetMode(ModePass))
	require.NoError(t, send(c, "GET", p.URL()+"/k/v1/records.json", "", nil).err)

	rel := filepath.Join(dir, "op.release")
	js := fmt.Sprintf(`{"mode":"pass","barriers":[
		{"id":"op_claim","phase":"before","release":%q,"match":{"path":"^/k/v1/record\\.json$","method":"PUT","body":{"app":7,"id":42,"field":"claimed_at"}}},
		{"id":"broken","phase":"sometime","match":{"path":"."}},
		{"id":"bad_regex","phase":"before","match":{"path":"("}}
	]}`, rel)
	require.NoError(t, os.WriteFile(ctl, []byte(js), 0o644))
	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil)
	a := arrived(t, p, "op_claim")
	assert.Equal(t, PhaseBefore, a.Phase)
	require.NoError(t, os.WriteFile(rel, nil, 0o644))
	assert.Equal(t, 200, recv(t, ch).status)
	assert.Len(t, p.Arrivals(), 1, "invalid barriers never match")

	require.NoError(t, os.WriteFile(ctl, []byte(`{"mode":"block-writes"}`), 0o644))
	requireNetworkError(t, send(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil))
	require.NoError(t, send(c, "GET", p.URL()+"/k/v1/records.json", "", nil).err)

	require.NoError(t, os.WriteFile(ctl, []byte(`{"mode":`), 0o644)) // half-written: pass
	assert.Equal(t, ModePass, p.Mode())
	require.NoError(t, os.WriteFile(ctl, []byte(`{"mode":"explode"}`), 0o644))
	assert.Equal(t, ModePass, p.Mode())
	require.NoError(t, os.WriteFile(ctl, []byte("block"), 0o644))
	assert.Equal(t, ModeBlock, p.Mode())
	require.NoError(t, os.Remove(ctl))
	assert.Equal(t, ModePass, p.Mode(), "a removed control file means pass")
}

func TestCloseFailsHeldRequests(t *testing.T) {
	u, p, c := proxied(t)
	require.NoError(t, p.AddBarrier(claimBarrier("held", PhaseBefore)))
	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", claimBody, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.WaitArrival(ctx, "held")
	require.NoError(t, err)
	require.NoError(t, p.Close())
	r := recv(t, ch)
	require.Error(t, r.err)
	assert.Zero(t, u.hitCount())
	_, err = p.WaitArrival(ctx, "other")
	assert.ErrorContains(t, err, "closed")
	a, err := p.WaitArrival(ctx, "held")
	require.NoError(t, err, "an arrival before Close is still reported")
	assert.Equal(t, "held", a.BarrierID)
	require.NoError(t, p.Close(), "Close is idempotent")
}

func TestWaitArrivalTimeoutNamesBarrier(t *testing.T) {
	u := newUpstream(t)
	p := newProxy(t, u, nil)
	require.NoError(t, p.AddBarrier(claimBarrier("late", PhaseBefore)))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.WaitArrival(ctx, "late")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "barrier late")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestUpstreamDownIsNetworkErrorAndPlainHTTPWorks(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	p, err := New(Options{Upstream: downURL, LogDir: t.TempDir()})
	require.NoError(t, err)
	defer p.Close()
	assert.True(t, strings.HasPrefix(p.URL(), "http://"))
	assert.Empty(t, p.CAFile())
	requireNetworkError(t, send(clientFor(t), "GET", p.URL()+"/k/v1/records.json", "", nil))

	_, err = New(Options{Upstream: "ftp://x", LogDir: t.TempDir()})
	assert.Error(t, err)
	_, err = New(Options{Upstream: "http://x"})
	assert.ErrorContains(t, err, "LogDir")
}

func TestSharedCAAndBundle(t *testing.T) {
	u := newUpstream(t)
	ca, err := NewCA()
	require.NoError(t, err)
	p1 := newProxy(t, u, func(o *Options) { o.CA = ca; o.Name = "poller" })
	p2 := newProxy(t, u, func(o *Options) { o.CA = ca; o.Name = "run" })

	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	keyFile := filepath.Join(t.TempDir(), "junk.pem")
	require.NoError(t, os.WriteFile(keyFile, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o644))
	assert.ErrorContains(t, WriteCABundle(bundle, u.caFile, keyFile), "no PEM certificate")
	require.NoError(t, WriteCABundle(bundle, u.caFile, p1.CAFile()))

	c := clientFor(t, bundle)
	for _, target := range []string{p1.URL(), p2.URL(), u.srv.URL} {
		r := send(c, "GET", target+"/k/v1/records.json", "", nil)
		require.NoError(t, r.err, target)
		assert.Equal(t, 200, r.status)
	}

	loaded, err := LoadCA(ca.CertPEM(), nil)
	assert.Error(t, err, "a CA without its key cannot sign")
	assert.Nil(t, loaded)
}

func TestChunkedBodyIsMatchedAndForwardedIntact(t *testing.T) {
	u, p, c := proxied(t)
	require.NoError(t, p.AddBarrier(claimBarrier("chunked", PhaseBefore)))
	ch := make(chan reply, 1)
	go func() {
		// A reader of unknown length makes the client send the body chunked.
		req, _ := http.NewRequest("PUT", p.URL()+"/k/v1/record.json", struct{ io.Reader }{strings.NewReader(claimBody)})
		resp, err := c.Do(req)
		if err != nil {
			ch <- reply{err: err}
			return
		}
		resp.Body.Close()
		ch <- reply{status: resp.StatusCode}
	}()
	arrived(t, p, "chunked")
	require.NoError(t, p.Release("chunked"))
	assert.Equal(t, 200, recv(t, ch).status)
	hits := u.hitList()
	require.Len(t, hits, 1)
	assert.Equal(t, claimBody, hits[0].Body)
}

// The traffic log names what a request touched — app, record id, field names — and never
// a field value; Traffic returns the same lines.
func TestTrafficNamesAppRecordAndFieldsNeverValues(t *testing.T) {
	const value = "PLANTED-FIELD-VALUE"
	_, p, c := proxied(t)
	send(c, "GET", p.URL()+"/k/v1/records.json?app=7&query=x", "", nil)
	send(c, "PUT", p.URL()+"/k/v1/record.json", `{"app":7,"id":"42","record":{"status":{"value":"`+value+`"},"finished_at":{"value":"`+value+`"}}}`, nil)
	send(c, "PUT", p.URL()+"/k/v1/records.json", `{"app":"8","records":[{"id":1,"record":{"b":{"value":"`+value+`"}}},{"id":2,"record":{"a":{"value":"`+value+`"}}}]}`, nil)
	send(c, "PUT", p.URL()+"/k/v1/record.json", `{"app":7,"updateKey":{"field":"record_key","value":"R1:abc"},"revision":3,"record":{"status":{"value":"`+value+`"}}}`, nil)
	lines := p.Traffic()
	require.Len(t, lines, 4)
	assert.Equal(t, []string{"7", "", "R1:abc"}, []string{lines[3].App, lines[3].RecordID, lines[3].RecordKey}, "a PUT by updateKey names its record by the key")
	assert.Equal(t, "", lines[1].RecordKey)
	assert.Equal(t, []string{"7", ""}, []string{lines[0].App, lines[0].RecordID})
	assert.Nil(t, lines[0].Fields)
	assert.Equal(t, []string{"7", "42"}, []string{lines[1].App, lines[1].RecordID})
	assert.Equal(t, []string{"finished_at", "status"}, lines[1].Fields)
	assert.Equal(t, 200, lines[1].Status)
	assert.Equal(t, "8", lines[2].App)
	assert.Equal(t, []string{"a", "b"}, lines[2].Fields)
	require.NoError(t, p.Close())
	data, err := os.ReadFile(p.TrafficLogPath())
	require.NoError(t, err)
	assert.NotContains(t, string(data), value)
	assert.Contains(t, string(data), `"fields":["finished_at","status"]`)
	assert.Contains(t, string(data), `"record_id":"42"`)
	assert.Contains(t, string(data), `"record_key":"R1:abc"`)
}

// A barrier with After holds nothing until a request matching After has arrived: the
// heartbeats before the arming POST pass, the first one after it is held.
func TestBarrierArmedByAnEarlierRequest(t *testing.T) {
	_, p, c := proxied(t)
	hb := `{"app":7,"updateKey":{"field":"record_key","value":"LOCK:x"},"record":{"heartbeat_at":{"value":"t"}}}`
	require.NoError(t, p.AddBarrier(Barrier{ID: "hb_after_attempt", Phase: PhaseAfterSuccess,
		Match: Match{Path: `^/k/v1/record\.json$`, Method: "PUT", Body: &BodyMatch{Field: "heartbeat_at"}},
		After: &Match{Path: `^/k/v1/record\.json$`, Method: "POST", Body: &BodyMatch{Field: "attempt_key"}}}))

	for i := 0; i < 2; i++ { // heartbeats before the attempt: not held
		r := send(c, "PUT", p.URL()+"/k/v1/record.json", hb, nil)
		require.NoError(t, r.err)
		assert.Equal(t, 200, r.status)
	}
	// Another POST does not arm it.
	require.NoError(t, send(c, "POST", p.URL()+"/k/v1/record.json", `{"app":8,"record":{"run_id":{"value":"r"}}}`, nil).err)
	require.NoError(t, send(c, "PUT", p.URL()+"/k/v1/record.json", hb, nil).err)
	assert.Empty(t, p.Arrivals())

	require.NoError(t, send(c, "POST", p.URL()+"/k/v1/record.json", `{"app":8,"record":{"attempt_key":{"value":"A1"}}}`, nil).err)
	assert.Empty(t, p.Arrivals(), "the arming request itself is not held")
	ch := sendAsync(c, "PUT", p.URL()+"/k/v1/record.json", hb, nil)
	a := arrived(t, p, "hb_after_attempt")
	assert.Equal(t, 200, a.ResponseStatus)
	require.NoError(t, p.Release("hb_after_attempt"))
	assert.Equal(t, 200, recv(t, ch).status)
	assert.Len(t, p.Arrivals(), 1)
}

// Every PUT and DELETE says whether it carried kintone's revision fence, in memory and in the
// log file; a write to the record(s) endpoint keeps in memory the values of the judged fields
// only (Options.Judged), and none of them reaches the log file. Answers are numbered in the
// order they came.
func TestTrafficRecordsFenceAndKeepsJudgedValuesInMemoryOnly(t *testing.T) {
	const value = "PLANTED-JUDGED-VALUE"
	u := newUpstream(t)
	p := newProxy(t, u, func(o *Options) { o.Judged = []string{"request_state"} })
	c := clientFor(t, p.CAFile())
	rec := `"record":{"request_state":{"value":"` + value + `"},"reason":{"value":"not kept"}}`
	bodies := []struct{ method, path, body string }{
		{"PUT", "/k/v1/record.json", `{"app":7,"id":"42","revision":"3",` + rec + `}`}, // fenced by id
		{"PUT", "/k/v1/record.json", `{"app":7,"id":"42",` + rec + `}`},                // no revision
		{"PUT", "/k/v1/record.json", `{"app":7,"id":"42","revision":-1,` + rec + `}`},  // kintone's "no check"
		{"PUT", "/k/v1/record.json", `{"app":7,"updateKey":{"field":"record_key","value":"R1:k"},"revision":5,` + rec + `}`},
		{"PUT", "/k/v1/records.json", `{"app":7,"records":[{"id":1,"revision":2,` + rec + `},{"id":2,` + rec + `}]}`}, // one unfenced record
		{"PUT", "/k/v1/records.json", `{"app":7,"records":[{"id":1,"revision":2,` + rec + `},{"id":2,"revision":"4",` + rec + `}]}`},
		{"DELETE", "/k/v1/records.json", `{"app":7,"ids":[1,2],"revisions":[3,4]}`},
		{"POST", "/k/v1/record.json", `{"app":7,` + rec + `}`},
	}
	for _, b := range bodies {
		require.Equal(t, 200, send(c, b.method, p.URL()+b.path, b.body, nil).status)
	}
	send(c, "GET", p.URL()+"/k/v1/records.json?app=7", "", nil)
	lines := p.Traffic()
	require.Len(t, lines, 9)
	var fenced []string
	for _, l := range lines {
		switch {
		case l.Fenced == nil:
			fenced = append(fenced, "-")
		default:
			fenced = append(fenced, strconv.FormatBool(*l.Fenced))
		}
	}
	assert.Equal(t, []string{"true", "false", "false", "true", "false", "true", "true", "-", "-"}, fenced)
	require.NotNil(t, lines[0].Write)
	assert.Equal(t, map[string]string{"request_state": value}, lines[0].Write.Values, "only the judged fields' values")
	assert.Equal(t, "3", lines[0].Write.Revision)
	assert.Equal(t, "R1:k", lines[3].Write.RecordKey)
	assert.Equal(t, "record_key", lines[3].Write.UpdateKey)
	assert.Nil(t, lines[8].Write, "a read is no write")
	for i := 1; i < len(lines); i++ {
		assert.Greater(t, lines[i].Answer, lines[i-1].Answer, "answers are numbered in order")
	}
	for i, l := range lines {
		assert.NotZero(t, l.Sent, "line %d was forwarded", i)
		assert.Less(t, l.Sent, l.Answer, "line %d: forwarded before it was answered", i)
		if i > 0 {
			assert.Greater(t, l.Sent, lines[i-1].Answer, "line %d: sent one after another, so after the previous answer", i)
		}
	}
	require.NoError(t, p.Close())
	data, err := os.ReadFile(p.TrafficLogPath())
	require.NoError(t, err)
	assert.NotContains(t, string(data), value)
	assert.Equal(t, 4, strings.Count(string(data), `"fenced":true`))
	assert.Equal(t, 3, strings.Count(string(data), `"fenced":false`))
}
