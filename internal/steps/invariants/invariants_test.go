package invariants

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/results"
)

// partyProxy is a proxy named name in front of a stand-in kintone that answers every
// request 200, with the judged fields kept as the scenario's proxies keep them.
func partyProxy(t *testing.T, upstream, name string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(faultproxy.Options{Name: name, Upstream: upstream, LogDir: t.TempDir(), Judged: schedule.JudgedFields()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func put(t *testing.T, p *faultproxy.Proxy, body string) {
	t.Helper()
	send(t, p, http.MethodPut, body)
}

func send(t *testing.T, p *faultproxy.Proxy, method, body string) {
	t.Helper()
	req, err := http.NewRequest(method, p.URL()+"/k/v1/record.json", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

func recordOf(t *testing.T, st *scenario.State) *results.Scenario {
	rec := &results.Scenario{ID: st.ID}
	st.Evidence(rec)
	return rec
}

// The run path's check: a poller's claim PUT without its revision, logged by its proxy, fails
// the scenario with the assertion "invariant puts-fenced" naming the write; the other
// invariants are asserted to hold; writes to apps the invariants do not judge are left out,
// and the writes of every party are ordered by their answers.
func TestUnfencedClaimFailsInvariantPutsFenced(t *testing.T) {
	kintone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			_, _ = io.WriteString(w, `{"id":"40","revision":"1"}`)
			return
		}
		_, _ = io.WriteString(w, `{"revision":"2"}`)
	}))
	defer kintone.Close()
	a, b := partyProxy(t, kintone.URL, "poller A"), partyProxy(t, kintone.URL, "poller B")
	claim := `"record":{"request_state":{"value":"ACCEPTED"},"claimed_at":{"value":"2026-01-01T00:00:00Z"}}`
	put(t, b, `{"app":"103","id":"7","revision":"1",`+claim+`}`)          // fenced: loses nothing
	put(t, a, `{"app":"103","id":"7",`+claim+`}`)                         // the planted bug: no revision
	put(t, a, `{"app":"104","id":"9","record":{"status":{"value":"x"}}}`) // JOB log: not judged
	send(t, b, http.MethodPost, `{"app":"101","record":{"record_key":{"value":"LOCK:n1"}}}`)
	writes := partyWrites([]string{"poller A", "poller B"}, []*faultproxy.Proxy{a, b}, map[string]string{"101": "state", "103": "request"})
	require.Len(t, writes, 3)
	assert.Equal(t, []string{"poller B", "poller A", "poller B"}, []string{writes[0].Sig.Process, writes[1].Sig.Process, writes[2].Sig.Process}, "in the order of their answers")
	assert.Equal(t, "ACCEPTED", writes[1].Values["request_state"])
	assert.Equal(t, 200, writes[1].Status)
	assert.Equal(t, "40", writes[2].RecordID, "a POST is named by the id kintone gave its record")
	assert.Equal(t, "LOCK", writes[2].Sig.Kind)

	st, err := scenario.New("p2-01-01", nil, t.TempDir(), nil)
	require.NoError(t, err)
	err = judgeInvariants(st, schedule.History{Writes: writes}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "puts-fenced")
	rec := recordOf(t, st)
	require.Len(t, rec.Assertions, len(schedule.Invariants), "one assertion per invariant")
	var failed []results.Assertion
	for _, x := range rec.Assertions {
		if !x.OK {
			failed = append(failed, x)
		}
	}
	require.Len(t, failed, 1)
	assert.Equal(t, "invariant puts-fenced", failed[0].What)
	assert.Equal(t, "no violation", failed[0].Expected)
	assert.Contains(t, failed[0].Seen, "poller A PUT request")
	assert.Contains(t, failed[0].Seen, "carries no revision")
}

// An exempted invariant that is violated is noted with its reason, not asserted; one that
// held is noted stale.
func TestInvariantExemptionsNoteViolationsAndStaleness(t *testing.T) {
	h := schedule.History{Writes: []schedule.Write{{Seq: 0, Sig: schedule.Signature{Process: "poller A", Method: "PUT", Role: "request"}, RecordID: "7", Status: 200, Released: time.Now()}}}
	st, err := scenario.New("x", nil, t.TempDir(), nil)
	require.NoError(t, err)
	exempt := map[string]string{"puts-fenced": "the scenario plants an unfenced write", "one-run-per-key": "never needed"}
	require.NoError(t, judgeInvariants(st, h, exempt))
	rec := recordOf(t, st)
	assert.Len(t, rec.Assertions, len(schedule.Invariants)-2)
	for _, x := range rec.Assertions {
		assert.True(t, x.OK, x.What)
		assert.NotEqual(t, "invariant puts-fenced", x.What)
	}
	notes := map[string]string{}
	for _, n := range rec.Notes {
		notes[n.What] = n.Detail
	}
	assert.Contains(t, notes["invariant puts-fenced exempted"], "the scenario plants an unfenced write; 1 violation(s): write 0")
	assert.Contains(t, notes[ExemptionStaleNote], "one-run-per-key held")
	assert.Contains(t, notes[ExemptionStaleNote], "never needed")
}
