package kintoneapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const busyBody = `{"code":"GAIA_TO04","id":"x","message":"The number of concurrent API requests exceeds the limit."}`

// busyServer answers the first `refuse` requests with 429 (body), then hands each later one
// to ok. It records every request's method and body.
type busyServer struct {
	refuse int
	body   string
	header http.Header
	ok     func(w http.ResponseWriter, r *http.Request)

	mu     sync.Mutex
	bodies []string
}

func (b *busyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.bodies = append(b.bodies, r.Method+" "+string(data))
	n := len(b.bodies)
	b.mu.Unlock()
	if n <= b.refuse {
		for k, v := range b.header {
			w.Header()[k] = v
		}
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, b.body)
		return
	}
	b.ok(w, r)
}

func (b *busyServer) sent() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.bodies...)
}

// noWait records the backoffs instead of sleeping.
type noWait struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (n *noWait) sleep(ctx context.Context, d time.Duration) error {
	n.mu.Lock()
	n.waits = append(n.waits, d)
	n.mu.Unlock()
	return ctx.Err()
}

func retryClient(t *testing.T, h http.Handler, p Retry) *Client {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := New(srv.URL, nil, map[string]string{"7": "tok"})
	c.Retry = p
	return c
}

func TestBackoffDoublesToTheCapWithEqualJitter(t *testing.T) {
	ms := time.Millisecond
	low := Retry{Initial: 250 * ms, Max: 8 * time.Second, Jitter: func() float64 { return 0 }}
	high := low
	high.Jitter = func() float64 { return 0.999999 }
	var lows, highs []time.Duration
	for a := 1; a <= 8; a++ {
		lows = append(lows, low.Backoff(a))
		highs = append(highs, high.Backoff(a).Round(ms))
	}
	assert.Equal(t, []time.Duration{125 * ms, 250 * ms, 500 * ms, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}, lows,
		"never less than half the step")
	assert.Equal(t, []time.Duration{250 * ms, 500 * ms, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}, highs,
		"never more than the step, and the step stops at Max")
	assert.Equal(t, 8*time.Second, high.Backoff(1<<30).Round(ms), "a huge attempt number neither overflows nor loops long")
	for range 100 {
		d := DefaultRetry.Backoff(3)
		assert.True(t, d >= 500*ms && d < time.Second, "default jitter in [step/2, step): %s", d)
	}
}

// A write refused with GAIA_TO04 was not processed: it is sent again with the same body
// until kintone takes it, and the caller sees only the success.
func TestWriteRefusedWithTO04IsSentAgain(t *testing.T) {
	nw := &noWait{}
	b := &busyServer{refuse: 3, body: busyBody, ok: func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"9","revision":"1"}`)
	}}
	c := retryClient(t, b, Retry{MaxAttempts: 5, Initial: 100 * time.Millisecond, Max: time.Second, Sleep: nw.sleep, Jitter: func() float64 { return 0 }})
	id, _, err := c.AddRecord(context.Background(), "7", Values(map[string]any{"k": "v"}))
	require.NoError(t, err)
	assert.Equal(t, "9", id)
	sent := b.sent()
	require.Len(t, sent, 4)
	for _, s := range sent {
		assert.Equal(t, sent[0], s, "the same body every time")
	}
	assert.Contains(t, sent[0], `"record":{"k":{"value":"v"}}`)
	assert.Equal(t, []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}, nw.waits)
}

// Uploads are multipart: their body is replayed too.
func TestUploadRefusedWithTO04IsSentAgain(t *testing.T) {
	nw := &noWait{}
	b := &busyServer{refuse: 1, body: busyBody, ok: func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"fileKey":"fk"}`)
	}}
	c := retryClient(t, b, Retry{MaxAttempts: 3, Initial: time.Millisecond, Max: time.Millisecond, Sleep: nw.sleep})
	key, err := c.UploadFile(context.Background(), "7", "a.zip", "application/zip", []byte("zip bytes"))
	require.NoError(t, err)
	assert.Equal(t, "fk", key)
	sent := b.sent()
	require.Len(t, sent, 2)
	assert.Equal(t, sent[0], sent[1])
	assert.Contains(t, sent[1], "zip bytes")
}

// A 429 that is not kintone's admission refusal may have been processed: a write is not
// sent again, a read is.
func TestOther429RetriesReadsOnly(t *testing.T) {
	other := `{"code":"","message":"slow down"}`
	ok := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"records":[],"revision":"2"}`) }
	p := Retry{MaxAttempts: 4, Initial: time.Millisecond, Max: time.Millisecond, Sleep: (&noWait{}).sleep}

	w := &busyServer{refuse: 1, body: other, ok: ok}
	_, err := retryClient(t, w, p).UpdateRecord(context.Background(), "7", "1", Values(map[string]any{"k": "v"}), "1")
	require.Error(t, err)
	assert.Equal(t, http.StatusTooManyRequests, StatusOf(err))
	assert.Len(t, w.sent(), 1, "an update that may have been applied is not repeated")

	r := &busyServer{refuse: 1, body: other, ok: ok}
	_, err = retryClient(t, r, p).GetRecords(context.Background(), "7", "", nil)
	require.NoError(t, err)
	assert.Len(t, r.sent(), 2)
}

// After MaxAttempts the last 429 is returned, saying how often it was sent.
func TestRetryGivesUpAfterMaxAttempts(t *testing.T) {
	nw := &noWait{}
	b := &busyServer{refuse: 100, body: busyBody}
	c := retryClient(t, b, Retry{MaxAttempts: 3, Initial: time.Millisecond, Max: time.Millisecond, Sleep: nw.sleep})
	_, err := c.GetRecords(context.Background(), "7", "", nil)
	require.Error(t, err)
	assert.True(t, IsCode(err, "GAIA_TO04"))
	assert.Contains(t, err.Error(), "(sent 3 times)")
	assert.Len(t, b.sent(), 3)
	assert.Len(t, nw.waits, 2)

	// The zero Retry sends once.
	once := &busyServer{refuse: 100, body: busyBody}
	_, err = retryClient(t, once, Retry{}).GetRecords(context.Background(), "7", "", nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "sent")
	assert.Len(t, once.sent(), 1)
}

// The caller's context ends the backoff at once: the 429 and the cancellation both show.
func TestRetryStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := &busyServer{refuse: 100, body: busyBody}
	slept := make(chan struct{})
	c := retryClient(t, b, Retry{MaxAttempts: 10, Initial: time.Hour, Max: time.Hour})
	c.Retry.Sleep = func(ctx context.Context, d time.Duration) error {
		close(slept)
		return sleepCtx(ctx, d) // the real sleeper: only the cancellation can end an hour
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.GetRecords(ctx, "7", "", nil)
		done <- err
	}()
	<-slept
	cancel()
	err := <-done
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.True(t, IsCode(err, "GAIA_TO04"), "%v", err)
	assert.Len(t, b.sent(), 1)
}

// Retry-After is honoured when longer than the backoff; one over a minute is not waited out.
func TestRetryAfterHeader(t *testing.T) {
	nw := &noWait{}
	ok := func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"records": []any{}})
	}
	b := &busyServer{refuse: 1, body: busyBody, header: http.Header{"Retry-After": {"3"}}, ok: ok}
	c := retryClient(t, b, Retry{MaxAttempts: 3, Initial: time.Millisecond, Max: time.Millisecond, Sleep: nw.sleep})
	_, err := c.GetRecords(context.Background(), "7", "", nil)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{3 * time.Second}, nw.waits)

	nw.waits = nil
	ignoring := &busyServer{refuse: 1, body: busyBody, header: http.Header{"Retry-After": {"3"}}, ok: ok}
	_, err = retryClient(t, ignoring, Retry{MaxAttempts: 3, Initial: time.Millisecond, Max: time.Millisecond, Sleep: nw.sleep, IgnoreRetryAfter: true,
		Jitter: func() float64 { return 0 }}).GetRecords(context.Background(), "7", "", nil)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{500 * time.Microsecond}, nw.waits, "IgnoreRetryAfter: the schedule alone")

	long := &busyServer{refuse: 1, body: busyBody, header: http.Header{"Retry-After": {"3600"}}, ok: ok}
	_, err = retryClient(t, long, Retry{MaxAttempts: 3, Initial: time.Millisecond, Max: time.Millisecond, Sleep: nw.sleep}).GetRecords(context.Background(), "7", "", nil)
	require.Error(t, err)
	assert.True(t, IsCode(err, "GAIA_TO04"))
	assert.Len(t, long.sent(), 1)
}

// New clients back off by default.
func TestNewUsesDefaultRetry(t *testing.T) {
	c := New("https://example.invalid", nil, nil)
	assert.Equal(t, DefaultRetry.MaxAttempts, c.Retry.MaxAttempts)
	assert.Equal(t, DefaultRetry.Initial, c.Retry.Initial)
	assert.Equal(t, DefaultRetry.Max, c.Retry.Max)
}
