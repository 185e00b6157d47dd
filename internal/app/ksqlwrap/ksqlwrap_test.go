package ksqlwrap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/steps/csv/wrapmode"
)

// The wrapper's tests start this test binary as the real kSQL-Flow: a launcher whose one own
// argument is fakeKsqlFlowArg (so every call also proves --launcher-args 1 is honoured).
const fakeKsqlFlowArg = "--fake-ksql-flow"

func init() {
	if len(os.Args) > 1 && os.Args[1] == fakeKsqlFlowArg {
		os.Exit(fakeKsqlFlow(os.Args[2:]))
	}
}

// fakeCapabilities is what the fake answers to `capabilities --json`: a number beyond float64
// precision and an unknown member check that the rewrite keeps what it does not change.
const fakeCapabilities = `{"formatVersion":1,"kind":"CAPABILITIES","ksqlFlowVersion":"9.9.9","apiCallsCeiling":12345678901234567891,"vendorNote":{"x":[1,2]},"features":{"gracefulCancel":true,"importCsv":true,"resultCsv":true}}`

// fakeKsqlFlow plays kSQL-Flow's subcommands as far as the wrapper's tests need them.
func fakeKsqlFlow(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "fake kSQL-Flow: no subcommand")
		return 1
	}
	has := func(a string) bool { return slices.Contains(args[1:], a) }
	switch args[0] {
	case "capabilities":
		switch {
		case has("--wait-stop"):
			return waitStop()
		case has("--die"):
			p, _ := os.FindProcess(os.Getpid())
			_ = p.Kill() // ends by SIGKILL on Unix
			select {}
		case has("--fail"):
			fmt.Println(`{"kind":"ERROR"}`)
			return 4
		case has("--garbage"):
			fmt.Println("capabilities: not JSON")
			return 0
		case has("--json"):
			fmt.Println(fakeCapabilities)
		default:
			fmt.Println("kSQL-Flow 9.9.9 (fake)")
		}
		return 0
	case "run", "args":
		b, _ := json.Marshal(args)
		fmt.Println(string(b))
		if i := slices.Index(args, "--exit"); i >= 0 && i+1 < len(args) {
			n, _ := strconv.Atoi(args[i+1])
			return n
		}
		return 0
	case "cat":
		fmt.Fprintln(os.Stderr, "cat: on stderr")
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			return 1
		}
		return 0
	case "wait-stop":
		return waitStop()
	}
	fmt.Fprintf(os.Stderr, "fake kSQL-Flow: unknown subcommand %q\n", args[0])
	return 1
}

// waitStop says it is ready (with its pid) once its handler is installed, then ends as
// kSQL-Flow does on a graceful stop: CANCELLED, exit 3.
func waitStop() int {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	fmt.Fprintf(os.Stderr, "ready %d\n", os.Getpid())
	s := <-ch
	fmt.Printf("stopped by %v\n", s)
	return 3
}

// fakeLauncher is the wrapper's argv prefix for the fake kSQL-Flow in mode.
func fakeLauncher(t *testing.T, mode string) []string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return []string{"--mode", mode, "--launcher-args", "1", "--", self, fakeKsqlFlowArg}
}

type wrapped struct {
	code           int
	stdout, stderr string
}

// wrapIn runs the wrapper in this process (it relays: its stdio is not its own).
func wrapIn(t *testing.T, mode, stdin string, call ...string) wrapped {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := Run(append(fakeLauncher(t, mode), call...), strings.NewReader(stdin), &out, &errb, context.Background(), context.Background())
	require.NoError(t, err)
	return wrapped{code, out.String(), errb.String()}
}

func echoed(t *testing.T, stdout string) []string {
	t.Helper()
	var got []string
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), "stdout: %q", stdout)
	return got
}

func TestKsqlWrapLegacyCapabilitiesSaysImportCsvFalse(t *testing.T) {
	r := wrapIn(t, wrapmode.LegacyCapabilities, "", "capabilities", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.True(t, strings.HasSuffix(r.stdout, "}\n") && strings.Count(r.stdout, "\n") == 1, "one JSON object and a line end: %q", r.stdout)
	var want, got map[string]any
	require.NoError(t, json.Unmarshal([]byte(fakeCapabilities), &want))
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	want["features"].(map[string]any)["importCsv"] = false
	assert.Equal(t, want, got)
	assert.Contains(t, r.stdout, `"apiCallsCeiling":12345678901234567891`, "numbers are kept as written")
}

func TestKsqlWrapLegacyPassesEverythingElseThrough(t *testing.T) {
	r := wrapIn(t, wrapmode.LegacyCapabilities, "", "capabilities")
	assert.Equal(t, wrapped{0, "kSQL-Flow 9.9.9 (fake)\n", ""}, r, "text capabilities are not rewritten")

	call := []string{"run", "-f", "/x/job.sql", "--import-csv", "source=/io/in/a.csv", "--json"}
	r = wrapIn(t, wrapmode.LegacyCapabilities, "", call...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, call, echoed(t, r.stdout))

	// A failed capabilities call is the real one's answer, unchanged.
	r = wrapIn(t, wrapmode.LegacyCapabilities, "", "capabilities", "--json", "--fail")
	assert.Equal(t, wrapped{4, "{\"kind\":\"ERROR\"}\n", ""}, r)
}

func TestKsqlWrapLegacyRefusesWhatIsNotCapabilities(t *testing.T) {
	r := wrapIn(t, wrapmode.LegacyCapabilities, "", "capabilities", "--json", "--garbage")
	assert.Equal(t, 1, r.code)
	assert.Empty(t, r.stdout, "nothing made up")
	assert.Contains(t, r.stderr, "capabilities --json of")
	assert.Contains(t, r.stderr, "not a JSON object")

	for name, tc := range map[string]struct{ in, err string }{
		"two values":  {`{"kind":"CAPABILITIES","features":{}} {}`, "more than one JSON value"},
		"other kind":  {`{"kind":"PROFILE_DESCRIPTION","features":{}}`, "expected CAPABILITIES"},
		"no features": {`{"kind":"CAPABILITIES"}`, "no features object"},
		"array":       {`[1]`, "not a JSON object"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := legacyCapabilities([]byte(tc.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestKsqlWrapExportSJISOnlyOnExportRuns(t *testing.T) {
	export := []string{"run", "-f", "/x/export.sql", "--profile", "e2e", "--export-csv", "report=/io/out/report.csv"}
	r := wrapIn(t, wrapmode.ExportSJIS, "", export...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, append(slices.Clone(export), "--export-encoding", "sjis"), echoed(t, r.stdout))

	inline := []string{"run", "-f", "/x/export.sql", "--export-csv=report=/io/out/report.csv"}
	r = wrapIn(t, wrapmode.ExportSJIS, "", inline...)
	assert.Equal(t, append(slices.Clone(inline), "--export-encoding", "sjis"), echoed(t, r.stdout))

	for _, call := range [][]string{
		{"run", "-f", "/x/import.sql", "--import-csv", "source=/io/in/a.csv"}, // a run that does not export
		{"args", "--export-csv", "report=/io/out/report.csv"},                 // not a run
	} {
		r = wrapIn(t, wrapmode.ExportSJIS, "", call...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, call, echoed(t, r.stdout), "unchanged: %v", call)
	}
	r = wrapIn(t, wrapmode.ExportSJIS, "", "capabilities", "--json")
	assert.Equal(t, wrapped{0, fakeCapabilities + "\n", ""}, r, "capabilities are the real ones in this mode")
}

func TestKsqlWrapRelaysStdioAndExitCode(t *testing.T) {
	r := wrapIn(t, wrapmode.ExportSJIS, "line one\nline two\n", "cat")
	assert.Equal(t, wrapped{0, "line one\nline two\n", "cat: on stderr\n"}, r)

	r = wrapIn(t, wrapmode.LegacyCapabilities, "", "run", "--exit", "5")
	assert.Equal(t, 5, r.code)
	r = wrapIn(t, wrapmode.ExportSJIS, "", "run", "--export-csv", "r=/o", "--exit", "2")
	assert.Equal(t, 2, r.code)
}

func TestKsqlWrapRefusesBadUsage(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		err  string
	}{
		"no mode":           {[]string{"--", "ksql-flow", "run"}, "--mode is required"},
		"unknown mode":      {[]string{"--mode", "utf16", "--", "ksql-flow"}, `--mode "utf16"`},
		"no launcher":       {[]string{"--mode", wrapmode.ExportSJIS, "--"}, "no kSQL-Flow launcher"},
		"too many own args": {[]string{"--mode", wrapmode.ExportSJIS, "--launcher-args", "2", "--", "node", "cli.js"}, "--launcher-args 2"},
		"negative":          {[]string{"--mode", wrapmode.ExportSJIS, "--launcher-args", "-1", "--", "node"}, "--launcher-args -1"},
		"unknown flag":      {[]string{"--mode", wrapmode.ExportSJIS, "--encoding", "sjis", "--", "node"}, "-encoding"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			_, err := Run(tc.args, strings.NewReader(""), &out, &errb, context.Background(), context.Background())
			require.True(t, refusal.Is(err), "bad usage is a refusal: %v", err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Empty(t, out.String())
			assert.Empty(t, errb.String())
		})
	}
}
