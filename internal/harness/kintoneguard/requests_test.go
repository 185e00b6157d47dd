package kintoneguard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// deleting is the fake with deletes that take effect, so a sweep can check what is left.
type deleting struct{ f *fakeKintone }

func (d deleting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodDelete {
		d.f.ServeHTTP(w, r)
		return
	}
	var body struct {
		App string   `json:"app"`
		IDs []string `json:"ids"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	d.f.mu.Lock()
	d.f.writes = append(d.f.writes, r.Method+" "+r.URL.Path)
	if d.f.deleted == nil {
		d.f.deleted = map[string][]string{}
	}
	d.f.deleted[body.App] = append(d.f.deleted[body.App], body.IDs...)
	d.f.apps[body.App] = slices.DeleteFunc(d.f.apps[body.App], func(rec map[string]any) bool {
		id, _ := rec["$id"].(string)
		return slices.Contains(body.IDs, id)
	})
	d.f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
}

// The request sweep deletes exactly the scope's requests: the ones the search finds whose
// reason starts with "<scope>:", and the ones the scenario made (known ids) — never another
// scope's or a production request, whatever the search returns.
func TestSweepRequestsDeletesOnlyTheScopesRequests(t *testing.T) {
	_, f := newFixture(t)
	f.apps[appReq] = append(f.apps[appReq], map[string]any{"$id": "3", "reason": scope + "_trial2:rerun", "request_state": "DONE"})
	srv := httptest.NewServer(deleting{f})
	t.Cleanup(srv.Close)
	c, err := New(kintoneapi.New(srv.URL, srv.Client(), map[string]string{}), Apps{State: appState, Audit: appAudit, Request: appReq, Log: appLog}, scope, Options{})
	require.NoError(t, err)

	n, err := c.SweepRequests(context.Background(), []string{"2"})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.ElementsMatch(t, []string{"1", "2"}, f.deleted[appReq], "a sub-scope's request (…_trial2:) and other reasons stay")
	var left []string
	for _, r := range f.apps[appReq] {
		left = append(left, r["$id"].(string))
	}
	require.ElementsMatch(t, []string{"3", "50", "51"}, left)
	require.Empty(t, f.deleted[appState])

	// A request of the scope that is still there after the delete fails the sweep.
	f2 := &fakeKintone{apps: map[string][]map[string]any{appReq: {{"$id": "7", "reason": scope + ":x"}}}}
	srv2 := httptest.NewServer(f2) // deletes are acknowledged but never happen
	t.Cleanup(srv2.Close)
	c2, err := New(kintoneapi.New(srv2.URL, srv2.Client(), map[string]string{}), Apps{Request: appReq}, scope, Options{})
	require.NoError(t, err)
	_, err = c2.SweepRequests(context.Background(), nil)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "still there"), err.Error())
}
