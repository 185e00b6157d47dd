package faultproxy

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type recordingCounter struct {
	mu   sync.Mutex
	seen []string
}

func (c *recordingCounter) Add(app, method string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, fmt.Sprintf("%s %s %d", app, method, status))
}

func (c *recordingCounter) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// Every request the proxy sends upstream counts on its app and kintone's method, whatever
// the answer; what it blocks never reached the tenant and does not count.
func TestCounterCountsWhatTheProxySendsUpstream(t *testing.T) {
	u := newUpstream(t)
	c := &recordingCounter{}
	p := newProxy(t, u, func(o *Options) { o.Counter = c; o.AppsByToken = map[string]string{"tok-9": "9"} })
	hc := clientFor(t, p.CAFile())

	require.NoError(t, send(hc, "GET", p.URL()+"/k/v1/records.json?app=3", "", nil).err)
	require.NoError(t, send(hc, "POST", p.URL()+"/k/v1/records.json", `{"app":"4","query":""}`, map[string]string{"X-HTTP-Method-Override": "GET"}).err)
	require.NoError(t, send(hc, "PUT", p.URL()+"/k/v1/record.json", `{"app":5,"id":"1","record":{}}`, map[string]string{"X-Want-Status": "429"}).err)
	require.NoError(t, send(hc, "GET", p.URL()+"/k/v1/file.json?fileKey=abc", "", map[string]string{"X-Cybozu-API-Token": "tok-x, tok-9"}).err)
	require.NoError(t, send(hc, "GET", p.URL()+"/k/v1/file.json?fileKey=def", "", map[string]string{"X-Cybozu-API-Token": "tok-unknown"}).err)
	require.NoError(t, p.SetMode(ModeBlock))
	requireNetworkError(t, send(hc, "GET", p.URL()+"/k/v1/records.json?app=3", "", nil))

	assert.Equal(t, []string{"3 GET 200", "4 GET 200", "5 PUT 429", "9 GET 200", " GET 200"}, c.list(),
		"a request naming no app counts on its token's app, if known")
	assert.Equal(t, 5, u.hitCount(), "the upstream saw what was counted")
}

// A request sent to an upstream that never answers still counts, with no status.
func TestCounterCountsAnUnansweredRequest(t *testing.T) {
	u := newUpstream(t)
	c := &recordingCounter{}
	p := newProxy(t, u, func(o *Options) { o.Counter = c; o.Upstream = "https://127.0.0.1:1" })
	requireNetworkError(t, send(clientFor(t, p.CAFile()), "GET", p.URL()+"/k/v1/record.json?app=7&id=1", "", nil))
	assert.Equal(t, []string{"7 GET 0"}, c.list())
}
