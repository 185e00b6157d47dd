package cli

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTerminal makes every writer a terminal for the test.
func fakeTerminal(t *testing.T, yes bool) {
	t.Helper()
	was := isTerminal
	isTerminal = func(io.Writer) bool { return yes }
	t.Cleanup(func() { isTerminal = was })
}

const consoleText = "START m5-resume (m5/m5-resume.feature:6)\n" +
	"END   m5-resume passed 1.2s\n" +
	"END   m5-mid-failure failed 2s — step \"x\" failed: 3 passed before\n" +
	"\r\x1b[KPROGRESS 2/3 done, 1 passed, 1 failed; elapsed 3s, ETA 1s\n" +
	"1 passed, 1 failed, 1 not run, 60 not selected, of 63 — archive test-results/x\n"

// On a terminal: passed green, failed red, not run yellow, on the END, PROGRESS and totals
// lines only (the reason's "3 passed" and the START line stay as they are).
func TestColourOnATerminal(t *testing.T) {
	fakeTerminal(t, true)
	t.Setenv("NO_COLOR", "")
	var out bytes.Buffer
	w := colourConsole(&out, false)
	_, err := io.WriteString(w, consoleText)
	require.NoError(t, err)
	assert.Equal(t, "START m5-resume (m5/m5-resume.feature:6)\n"+
		"END   m5-resume \x1b[32mpassed\x1b[0m 1.2s\n"+
		"END   m5-mid-failure \x1b[31mfailed\x1b[0m 2s — step \"x\" failed: 3 passed before\n"+
		"\r\x1b[KPROGRESS 2/3 done, \x1b[32m1 passed\x1b[0m, \x1b[31m1 failed\x1b[0m; elapsed 3s, ETA 1s\n"+
		"\x1b[32m1 passed\x1b[0m, \x1b[31m1 failed\x1b[0m, \x1b[33m1 not run\x1b[0m, 60 not selected, of 63 — archive test-results/x\n", out.String())
}

// NO_COLOR (any non-empty value), --no-color, or a console that is not a terminal: no colour.
func TestNoColour(t *testing.T) {
	for name, c := range map[string]struct {
		terminal bool
		noColor  string
		flag     bool
	}{
		"NO_COLOR":          {terminal: true, noColor: "0"},
		"--no-color":        {terminal: true, flag: true},
		"not a terminal":    {terminal: false},
		"NO_COLOR and flag": {terminal: true, noColor: "yes", flag: true},
	} {
		t.Run(name, func(t *testing.T) {
			fakeTerminal(t, c.terminal)
			t.Setenv("NO_COLOR", c.noColor)
			var out bytes.Buffer
			w := colourConsole(&out, c.flag)
			_, err := io.WriteString(w, consoleText)
			require.NoError(t, err)
			assert.Equal(t, consoleText, out.String())
		})
	}
}

// The real terminal check says no to a pipe and a file: what flowtest writes there (and the
// archive, which no console writer reaches) is never coloured.
func TestPipesAndFilesAreNotTerminals(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(w))
	f, err := os.Create(t.TempDir() + "/console.txt")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f))
	assert.False(t, isTerminal(&bytes.Buffer{}))
}
