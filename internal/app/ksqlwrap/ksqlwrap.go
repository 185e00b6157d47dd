// Package ksqlwrap is the kSQL-Flow launcher the CSV steps give FlowNet to play a variant of
// the target's own kSQL-Flow (`flowtest ksql-flow-wrapper`, hidden): it is started by FlowNet,
// not by people, and ends like the kSQL-Flow it wraps.
package ksqlwrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/base/interrupt"
	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/steps/csv/wrapmode"
)

// Run is the hidden `flowtest ksql-flow-wrapper`: a kSQL-Flow launcher the CSV
// steps give FlowNet as KSQL_FLOW_BIN (with KSQL_FLOW_BIN_ARGS) to play a variant of the
// target's own kSQL-Flow — the same on the sandbox and on a live target, where the original
// used a generated Node stub and csv2-encoding-wrapper.mjs (scenarios.md §2.8.1, §2.9):
//
//	flowtest ksql-flow-wrapper --mode MODE --launcher-args N -- LAUNCHER [N launcher args] [SUBCOMMAND args…]
//
// FlowNet appends the subcommand to KSQL_FLOW_BIN_ARGS, so everything after the launcher's
// N own args is what FlowNet asked for. Modes:
//
//   - legacy-capabilities: a kSQL-Flow built before CSV import. `capabilities --json` runs the
//     real one and rewrites its one JSON object with features.importCsv = false; every other
//     call is passed through unchanged.
//   - export-sjis: a `run` carrying --export-csv gets `--export-encoding sjis` appended; every
//     other call is passed through unchanged.
//
// The real kSQL-Flow gets the caller's environment, stdin, stdout and stderr. Where nothing is
// rewritten on the way back, Unix replaces this process by it (execve): same pid, signals and
// exit status are its own, and an orphaned run keeps writing where FlowNet pointed it.
// Otherwise (the capabilities rewrite; every call on Windows, which has no exec) the child is
// relayed: the signals that cancel stop and now (interrupt.Watch: the first and the second
// SIGTERM/SIGINT) are forwarded, its exit code is returned, and a child killed by a signal
// makes the wrapper die by the same signal.
//
// Bad usage is a refusal (nothing started); otherwise the result is the exit status the
// wrapper must end with, the wrapped kSQL-Flow's.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer, stop, now context.Context) (int, error) {
	w, err := parseKsqlWrap(args)
	if err != nil {
		return 0, refusal.New("%v", err)
	}
	// Only a process whose stdio is its own may be replaced or die by a signal; called with
	// other writers (a test), the wrapper always relays and reports the signal as 128+n.
	w.self = stdin == os.Stdin && stdout == os.Stdout && stderr == os.Stderr
	return w.run(stdin, stdout, stderr, stop, now), nil
}

// errNoExec says this platform cannot replace the process: the child is relayed.
var errNoExec = errors.New("exec is not available on this platform")

// ksqlWrap is one parsed wrapper call.
type ksqlWrap struct {
	mode     string
	launcher string
	argv     []string // the launcher's own args, then what FlowNet asked for
	sub      string   // the subcommand FlowNet asked for ("" if none)
	subAt    int      // its index in argv
	self     bool     // the wrapper owns its process (may exec, may die by a signal)
}

func parseKsqlWrap(args []string) (*ksqlWrap, error) {
	fs := flag.NewFlagSet(wrapmode.Command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	mode := fs.String("mode", "", "legacy-capabilities | export-sjis")
	n := fs.Int("launcher-args", 0, "how many args after the launcher are the launcher's own")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch *mode {
	case wrapmode.LegacyCapabilities, wrapmode.ExportSJIS:
	case "":
		return nil, fmt.Errorf("--mode is required (%s or %s)", wrapmode.LegacyCapabilities, wrapmode.ExportSJIS)
	default:
		return nil, fmt.Errorf("--mode %q: expected %s or %s", *mode, wrapmode.LegacyCapabilities, wrapmode.ExportSJIS)
	}
	rest := fs.Args()
	if len(rest) == 0 || rest[0] == "" {
		return nil, errors.New("no kSQL-Flow launcher after the flags (… -- LAUNCHER [args…])")
	}
	if *n < 0 || *n > len(rest)-1 {
		return nil, fmt.Errorf("--launcher-args %d: the launcher %s is followed by %d args", *n, rest[0], len(rest)-1)
	}
	w := &ksqlWrap{mode: *mode, launcher: rest[0], argv: rest[1:], subAt: *n}
	if len(w.argv) > *n {
		w.sub = w.argv[*n]
	}
	return w, nil
}

// callArgs are the launcher's args with this mode's change, and whether its stdout must be
// rewritten.
func (w *ksqlWrap) callArgs() (args []string, rewrite bool) {
	args = slices.Clone(w.argv)
	after := w.subArgs()
	switch w.mode {
	case wrapmode.ExportSJIS:
		// As the original wrapper: only a run that exports gets the encoding.
		if w.sub == "run" && slices.ContainsFunc(after, func(a string) bool { return a == "--export-csv" || strings.HasPrefix(a, "--export-csv=") }) {
			args = append(args, "--export-encoding", "sjis")
		}
	case wrapmode.LegacyCapabilities:
		rewrite = w.sub == "capabilities" && slices.Contains(after, "--json")
	}
	return args, rewrite
}

// subArgs are the args after the subcommand.
func (w *ksqlWrap) subArgs() []string {
	if w.sub == "" {
		return nil
	}
	return w.argv[w.subAt+1:]
}

func (w *ksqlWrap) run(stdin io.Reader, stdout, stderr io.Writer, stop, now context.Context) int {
	args, rewrite := w.callArgs()
	if !rewrite && w.self {
		err := execReplace(w.launcher, args, stop) // returns only if exec is unavailable or failed
		if !errors.Is(err, errNoExec) {
			fmt.Fprintf(stderr, "flowtest %s: start %s: %v\n", wrapmode.Command, w.launcher, err)
			return 127
		}
	}
	var captured bytes.Buffer
	out := stdout
	if rewrite {
		out = &captured
	}
	code, err := w.relay(args, stdin, out, stderr, stop, now)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest %s: %v\n", wrapmode.Command, err)
		return 127
	}
	if !rewrite {
		return code
	}
	if code != 0 { // a failed capabilities call is the real one's answer, unchanged
		_, _ = stdout.Write(captured.Bytes())
		return code
	}
	doc, err := legacyCapabilities(captured.Bytes())
	if err != nil {
		fmt.Fprintf(stderr, "flowtest %s: capabilities --json of %s: %v\n", wrapmode.Command, w.launcher, err)
		return 1
	}
	if _, err := stdout.Write(doc); err != nil {
		return 1
	}
	return 0
}

// relay runs the real kSQL-Flow as a child, forwards the signals of stop and now to it until
// it exits and returns the exit code the wrapper must end with.
func (w *ksqlWrap) relay(args []string, stdin io.Reader, stdout, stderr io.Writer, stop, now context.Context) (int, error) {
	cmd := exec.Command(w.launcher, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", w.launcher, err)
	}
	release, err := bindChild(cmd.Process)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, fmt.Errorf("bind %s to the wrapper: %w", w.launcher, err)
	}
	defer release()
	done := make(chan struct{})
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for _, ctx := range []context.Context{stop, now} {
			select {
			case <-interrupt.Done(ctx):
				if s := interrupt.SignalOf(ctx); s != nil {
					forwardSignal(cmd.Process, s)
				}
			case <-done:
				return
			}
		}
	}()
	werr := cmd.Wait()
	close(done)
	<-forwarded
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return 0, fmt.Errorf("wait for %s: %w", w.launcher, werr)
	}
	return exitLike(cmd.ProcessState, w.self), nil
}

// legacyCapabilities rewrites a CAPABILITIES document (one JSON object and a line end, as
// kSQL-Flow's machine output is) with features.importCsv = false; every other member is kept
// as it came (numbers included).
func legacyCapabilities(out []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value on stdout")
	}
	if doc["kind"] != "CAPABILITIES" {
		return nil, fmt.Errorf("kind is %v, expected CAPABILITIES", doc["kind"])
	}
	features, ok := doc["features"].(map[string]any)
	if !ok {
		return nil, errors.New("no features object")
	}
	features["importCsv"] = false
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
