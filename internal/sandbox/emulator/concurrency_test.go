package emulator

import (
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parallel runs n calls of fn released together by a barrier and returns the responses.
func parallel(n int, fn func(i int) resp) []resp {
	out := make([]resp, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			out[i] = fn(i)
		}(i)
	}
	close(start)
	wg.Wait()
	return out
}

func countBy(rs []resp) map[string]int {
	m := map[string]int{}
	for _, r := range rs {
		if r.status == 200 {
			m["200"]++
		} else {
			m[r.code()]++
		}
	}
	return m
}

func TestConcurrentSameUniqueValue(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.state.Tokens["flownet"]
	rs := parallel(100, func(i int) resp {
		return f.c.do("POST", "/k/v1/record.json", tok, map[string]any{"app": f.state.ID, "record": rec(
			"record_key", "LOCK:N1", "record_type", "NETWORK_LOCK", "owner_invocation_id", fmt.Sprint("invoke_", i))})
	})
	assert.Equal(t, map[string]int{"200": 1, "CB_VA01": 99}, countBy(rs))
	q := f.query(t, f.state, `record_key = "LOCK:N1"`, url.Values{"totalCount": {"true"}})
	assert.Equal(t, "1", q.json["totalCount"], "never a persisted duplicate")
}

// TestUniqueCheckAndInsertAreOneStep orders two adds of the same unique value so that the
// second reaches the app while the first has passed its unique check and not yet inserted
// (the window TestConcurrentSameUniqueValue hits only by luck). The first add pauses
// between check and insert; the second is let go, and the first released, only once the
// second either waits for the app's write lock (atomic: it then sees the value taken) or
// has passed its own check (not atomic: both insert). kintone keeps one winner, the other
// gets 400 CB_VA01.
func TestUniqueCheckAndInsertAreOneStep(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.state.Tokens["flownet"]
	checked := make(chan struct{}, 4) // an add passed its unique checks
	waiting := make(chan struct{}, 4) // an add found the app's write lock taken
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	f.s.hooks = writeHooks{
		uniqueChecked: func(string) { checked <- struct{}{}; <-release },
		lockWait:      func(string) { waiting <- struct{}{} },
	}
	add := func(owner string, out *resp, done chan<- struct{}) {
		*out = f.c.do("POST", "/k/v1/record.json", tok, map[string]any{"app": f.state.ID, "record": rec(
			"record_key", "LOCK:N1", "record_type", "NETWORK_LOCK", "owner_invocation_id", owner)})
		done <- struct{}{}
	}
	// A guard against a hang of a broken emulator, never the ordering itself.
	step := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			let()
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	var first, second resp
	done := make(chan struct{}, 2)
	go add("invoke_first", &first, done)
	step("the first add to pass its unique check", checked)
	go add("invoke_second", &second, done)
	secondChecked := false
	select {
	case <-waiting: // held behind the first add's lock
	case <-checked: // passed its check while the first add had not inserted
		secondChecked = true
	case <-time.After(10 * time.Second):
		let()
		t.Fatal("timed out: the second add neither waited for the lock nor passed its check")
	}
	let()
	step("the first add", done)
	step("the second add", done)
	assert.False(t, secondChecked, "the second add passed its unique check between the first add's check and insert")
	assert.Equal(t, map[string]int{"200": 1, "CB_VA01": 1}, countBy([]resp{first, second}),
		"first: %d %s; second: %d %s", first.status, first.body, second.status, second.body)
	q := f.query(t, f.state, `record_key = "LOCK:N1"`, url.Values{"totalCount": {"true"}})
	assert.Equal(t, "1", q.json["totalCount"], "never a persisted duplicate")
}

func TestConcurrentSameRevision(t *testing.T) {
	for _, byKey := range []bool{false, true} {
		t.Run(fmt.Sprint("updateKey=", byKey), func(t *testing.T) {
			f := newFixture(t, Options{})
			id := f.addCSV(t, "claim", "")
			rs := parallel(100, func(i int) resp {
				body := map[string]any{"app": f.csv.ID, "revision": "1", "record": rec("test_value", fmt.Sprint("poller-", i))}
				if byKey {
					body["updateKey"] = map[string]any{"field": "test_key", "value": "claim"}
				} else {
					body["id"] = id
				}
				return f.c.do("PUT", "/k/v1/record.json", f.csv.Tokens["full"], body)
			})
			assert.Equal(t, map[string]int{"200": 1, "GAIA_CO02": 99}, countBy(rs))
			g := f.c.get("/k/v1/record.json", f.csv.Tokens["read"], url.Values{"app": {f.csv.ID}, "id": {id}})
			assert.Equal(t, "2", fieldValue(g.json["record"], "$revision"))
			for _, r := range rs {
				if r.status == 200 {
					assert.Equal(t, r.json["revision"], "2")
				}
			}
		})
	}
}

// TestMixedLoadNoLostUpdate runs 1,000 requests from 50 workers: revision-fenced increments
// of 10 counters (re-read on GAIA_CO02), inserts and queries. Every acknowledged increment
// must be in the final counters.
func TestMixedLoadNoLostUpdate(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.csv.Tokens["full"]
	const counters, workers, total = 10, 50, 1000
	for i := 0; i < counters; i++ {
		f.addCSV(t, fmt.Sprint("counter-", i), "0")
	}
	var mu sync.Mutex
	requests, acked, conflicts := 0, 0, 0
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if requests >= total {
			return false
		}
		requests++
		return true
	}
	var wg sync.WaitGroup
	errs := make(chan string, total)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for n := 0; ; n++ {
				switch n % 4 {
				case 0, 1: // read + fenced increment
					if !take() {
						return
					}
					key := fmt.Sprint("counter-", (w+n)%counters)
					g := f.query(t, f.csv, fmt.Sprintf(`test_key = "%s"`, key), nil)
					if g.status != 200 || len(records(g)) != 1 {
						errs <- fmt.Sprintf("read %s: %d %s", key, g.status, g.body)
						return
					}
					cur, _ := strconv.Atoi(fieldValue(records(g)[0], "test_value").(string))
					rev := fieldValue(records(g)[0], "$revision")
					if !take() {
						return
					}
					p := f.c.do("PUT", "/k/v1/record.json", tok, map[string]any{"app": f.csv.ID,
						"updateKey": map[string]any{"field": "test_key", "value": key}, "revision": rev,
						"record": rec("test_value", strconv.Itoa(cur+1))})
					mu.Lock()
					switch {
					case p.status == 200:
						acked++
					case p.code() == "GAIA_CO02":
						conflicts++
					default:
						errs <- fmt.Sprintf("put %s: %d %s", key, p.status, p.body)
					}
					mu.Unlock()
				case 2: // insert
					if !take() {
						return
					}
					r := f.c.do("POST", "/k/v1/record.json", tok, map[string]any{"app": f.csv.ID, "record": rec("test_key", fmt.Sprintf("row-%d-%d", w, n))})
					if r.status != 200 {
						errs <- fmt.Sprintf("add: %d %s", r.status, r.body)
					}
				case 3: // list
					if !take() {
						return
					}
					r := f.query(t, f.csv, `test_key like "row" order by $id desc limit 5`, nil)
					if r.status != 200 {
						errs <- fmt.Sprintf("list: %d %s", r.status, r.body)
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	q := f.query(t, f.csv, `test_key like "counter" limit 500`, nil)
	sum := 0
	for _, r := range records(q) {
		n, err := strconv.Atoi(fieldValue(r, "test_value").(string))
		require.NoError(t, err)
		sum += n
		rev, _ := strconv.Atoi(fieldValue(r, "$revision").(string))
		assert.Equal(t, n+1, rev, "one revision per increment")
	}
	assert.Equal(t, total, requests)
	assert.Equal(t, acked, sum, "acknowledged increments == final counters (conflicts: %d)", conflicts)
	assert.Positive(t, acked)
}
