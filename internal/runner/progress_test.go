package runner

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

func item(id string, run bool) Item {
	it := Item{Run: run}
	it.ID = id
	return it
}

// fakeClock advances only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var progressLine = regexp.MustCompile(`^PROGRESS (\d+)/(\d+) done, (\d+) passed, (\d+) failed(?:, (\d+) blocked/interrupted)?; elapsed \S+, ETA \S+$`)

// Without a terminal (CI): one plain line after each finished scenario, with the counts so far.
func TestProgressPlainLinePerFinishedScenario(t *testing.T) {
	fsys := selfFeatures(nil)
	clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	r := execute(t, fsys, plan(t, fsys, ""), Options{Status: &StatusOptions{
		Expected: map[string]time.Duration{"alpha": 2 * time.Second, "beta": time.Second, "delta": 3 * time.Second}, ExpectedFrom: "test-results/x", Now: clock.now}})
	out := r.progress.String()
	assert.NotContains(t, out, "\x1b", "no terminal control outside a terminal")
	assert.Contains(t, out, "PROGRESS 3 scenario(s) to run; ETA from the durations of test-results/x\n")
	var got []string
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if m := progressLine.FindStringSubmatch(l); m != nil {
			got = append(got, strings.Join(m[1:6], " "))
			require.Positive(t, i)
			assert.True(t, strings.HasPrefix(lines[i-1], "END "), "after the END line: %q", lines[i-1])
		}
	}
	// alpha passed, beta failed, delta passed: in run order (one worker).
	assert.Equal(t, []string{"1 3 1 0 ", "2 3 1 1 ", "3 3 2 1 "}, got, out)
	assert.Contains(t, out, "PROGRESS 1/3 done, 1 passed, 0 failed; elapsed 0s, ETA 4s\n", "beta and delta expected to take 1 s + 3 s")
	assert.Contains(t, out, "PROGRESS 3/3 done, 2 passed, 1 failed; elapsed 0s, ETA 0s\n")
}

// The estimate: expected durations shared by the workers, less what running scenarios have
// run; never shorter than the longest scenario left; unknown ones at the mean.
func TestProgressETA(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	items := []Item{item("a", true), item("b", true), item("c", true), item("d", true), item("skip", false)}
	var out bytes.Buffer
	s := newStatus(&out, StatusOptions{Expected: map[string]time.Duration{"a": 10 * time.Second, "b": 20 * time.Second, "c": 30 * time.Second}, ExpectedFrom: "A", Now: clock.now}, items, 2)
	eta, ok := s.eta(clock.now())
	require.True(t, ok)
	assert.Equal(t, 40*time.Second, eta, "(10+20+30+20 for d, the mean) / 2 workers")
	s.started("c")
	clock.add(25 * time.Second)
	eta, _ = s.eta(clock.now())
	assert.Equal(t, 27500*time.Millisecond, eta, "c has 5 s left: (10+20+5+20)/2")
	s.finished(&results.Scenario{ID: "a", Status: results.StatusPassed, DurationMS: 10000})
	s.finished(&results.Scenario{ID: "b", Status: results.StatusBlocked, DurationMS: 20000})
	s.finished(&results.Scenario{ID: "d", Status: results.StatusFailed, DurationMS: 20000})
	eta, _ = s.eta(clock.now())
	assert.Equal(t, 5*time.Second, eta, "one left: its own remaining time, not half of it")
	assert.Equal(t, "PROGRESS 3/4 done, 1 passed, 1 failed, 1 blocked/interrupted; elapsed 25s, ETA 5s", s.line())
	s.finished(&results.Scenario{ID: "skip", Status: results.StatusPassed}) // not selected: not counted
	assert.Equal(t, 3, s.done)

	// Without an earlier run: unknown until a scenario has finished, then this run's pace.
	s = newStatus(&out, StatusOptions{Now: clock.now}, items, 1)
	_, ok = s.eta(clock.now())
	assert.False(t, ok)
	assert.Contains(t, s.line(), "ETA unknown")
	s.finished(&results.Scenario{ID: "a", Status: results.StatusPassed, DurationMS: 6000})
	eta, _ = s.eta(clock.now())
	assert.Equal(t, 18*time.Second, eta, "three left at 6 s each")
	assert.Contains(t, out.String(), "ETA from this run's own pace")
}

// screen is what a terminal shows after out: each erase-line ("\r\x1b[K") clears the line.
func screen(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.LastIndex(l, eraseLine); i >= 0 {
			l = l[i+len(eraseLine):]
		}
		lines = append(lines, l)
	}
	return lines
}

// On a terminal: one status line, always the last, redrawn under every console line; at the
// end it stays as a line of its own.
func TestProgressTerminalLine(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	var out bytes.Buffer
	s := newStatus(&out, StatusOptions{Terminal: true, Every: time.Hour, Now: clock.now}, []Item{item("a", true), item("b", true)}, 1)
	s.Write([]byte("START a (a.feature:1)\n"))
	s.started("a")
	clock.add(3 * time.Second)
	s.Write([]byte("  step chatter, "))
	s.Write([]byte("in two writes\n"))
	s.Write([]byte("END   a passed 3s\n"))
	s.finished(&results.Scenario{ID: "a", Status: results.StatusPassed, DurationMS: 3000})
	clock.add(time.Second)
	s.stop()
	assert.Contains(t, out.String(), eraseLine)
	assert.Equal(t, []string{
		"PROGRESS 2 scenario(s) to run; ETA from this run's own pace, once a scenario has finished (no earlier archive of this selection)",
		"START a (a.feature:1)",
		"  step chatter, in two writes",
		"END   a passed 3s",
		"PROGRESS 1/2 done, 1 passed, 0 failed; elapsed 4s, ETA 3s",
		"",
	}, screen(out.String()))
}

// A status line wider than the terminal would wrap and could not be erased: it is cut.
func TestProgressTerminalLineFitsTheWidth(t *testing.T) {
	var out bytes.Buffer
	s := newStatus(&out, StatusOptions{Terminal: true, Every: time.Hour, Width: func() int { return 40 }}, []Item{item("a", true)}, 1)
	s.Write([]byte("START a\n"))
	lines := screen(out.String())
	assert.Equal(t, "PROGRESS 0/1 done, 0 passed, 0 failed; ", lines[len(lines)-1], "39 columns")
	s.stop()
}

// redactor is the console redactor's job in internal/app/cli, here as a plain writer.
type redactor struct {
	w   *bytes.Buffer
	red *redact.Redactor
}

func (r redactor) Write(p []byte) (int, error) { r.w.Write(r.red.Bytes(p)); return len(p), nil }

// The progress lines go to Progress like every console line: through its redactor.
func TestProgressGoesThroughTheConsoleWriter(t *testing.T) {
	secret := "progress-secret-4711"
	var out bytes.Buffer
	w := redactor{w: &out, red: redact.New(map[string]string{"KSQL_SPIKE_TOKEN_EXEC": secret}, nil)}
	s := newStatus(w, StatusOptions{Terminal: true, Every: time.Hour, Expected: map[string]time.Duration{"a": time.Second}, ExpectedFrom: "/tmp/" + secret}, []Item{item("a", true)}, 1)
	s.Write([]byte("START a\n"))
	s.stop()
	assert.NotContains(t, out.String(), secret)
	assert.Contains(t, out.String(), "[REDACTED:KSQL_SPIKE_TOKEN_EXEC]")
}
