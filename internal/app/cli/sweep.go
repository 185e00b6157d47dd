package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/ksqlflow/flowtest/internal/app/sweep"
	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// sweepFlags are the flags of `flowtest sweep`: the target and its configuration (the same
// preflight as run), how old a leftover must be, and whether to delete it.
type sweepFlags struct {
	runFlags
	olderThan time.Duration
	delete    bool
}

func (f *sweepFlags) bind(fs *flag.FlagSet) {
	f.bindNamed(fs, sweepFlagNames...)
	durationFlag(fs, &f.olderThan, "older-than", time.Hour, "only scopes made longer ago than this (a positive `duration`); keep it above the longest run of a runner on another machine")
	fs.BoolVar(&f.delete, "delete", false, "delete what is listed (default: list only)")
	fs.StringVar(&f.out, "out", "test-results", "results root: the sweep record goes to <out>/<YYYY-MM-DD>/<HHMMSS>-sweep/sweep.json")
}

// cmdSweep is `flowtest sweep`: its flags, the session and the same safety preflight as run,
// the target, the identifier rules over what would be deleted, and the exit code; finding and
// deleting the leftovers is internal/sweep.
func cmdSweep(inv invocation, sf *sweepFlags, args []string) int {
	stdout, stderr, f := inv.stdout, inv.stderr, &sf.runFlags
	if code, ok := sf.check(inv, args); !ok {
		return code
	}
	s, err := openSession(*f)
	if err != nil {
		return exitFor(stderr, "sweep", err)
	}
	defer s.close()
	red := s.consoleRedactor(stderr, "sweep")
	stdout, stderr = redactConsole(stdout, red), redactConsole(stderr, red)

	// The same safety preflight as run (deny list, profile, prefix, https, …).
	if static := safety.Preflight(s.in); !static.OK() {
		fmt.Fprintln(stderr, "flowtest sweep: refused by preflight; nothing was read or deleted:")
		safety.FormatViolations(stderr, static)
		return runner.ExitRefused
	}
	ctx := inv.stop // the first SIGINT/SIGTERM stops the sweep at its next step
	tgt, code := s.sweepTarget(ctx, f.sandboxBin, stderr)
	if tgt == nil {
		return code
	}
	defer tgt.Close()
	for _, a := range tgt.Apps {
		for kind, tok := range a.Tokens {
			red.AddSecret("token "+a.Role+" "+kind, tok)
		}
	}

	now := time.Now().UTC()
	rec := &sweep.Record{SchemaVersion: 1, Target: tgt.Name, BaseURL: tgt.BaseURL, At: now, OlderThan: sf.olderThan.String(), Delete: sf.delete}
	sw, err := sweep.New(tgt, guardApps(tgt))
	if err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
		return runner.ExitRefused
	}
	live, err := sweep.FindLiveRunners("")
	if err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
		return runner.ExitRefused
	}
	rec.LiveRunners = live.Runners
	found, skipped, err := sw.Find(ctx, sweep.FindOptions{Now: now, OlderThan: sf.olderThan, Live: live})
	if err != nil {
		return exitFor(stderr, "sweep", err) // interrupted: 130, nothing was deleted or written
	}
	rec.Skipped = skipped
	// Every scope the sweep would delete passes the run's own identifier rules first.
	if err := s.checkLaterIdentifiers(scopeIdentifiers(found)); err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: refused: %v\n", err)
		return runner.ExitRefused
	}
	var failed bool
	var stopped error // the interruption of --delete: the record still says what was deleted
	if sf.delete {
		// The first signal stops before the next scope; the second cuts the one under way.
		failed, stopped = sw.DeleteAll(ctx, inv.now, found, func(sc *sweep.Scope) {
			fmt.Fprintf(stdout, "flowtest sweep: %s %s\n", sc.Action, sc.Head)
		})
	}
	rec.Scopes = found
	sweep.Print(stdout, rec)
	dir, err := sweep.WriteRecord(f.out, now, rec, red)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: the sweep record: %v\n", err)
		return runner.ExitFailed
	}
	fmt.Fprintf(stdout, "flowtest sweep: record %s\n", filepath.Join(dir, sweep.RecordFile))
	switch {
	case stopped != nil:
		return exitFor(stderr, "sweep", stopped)
	case failed:
		return runner.ExitFailed
	}
	return runner.ExitPassed
}

// check checks sweep's flags and arguments; when it returns false, code is the exit (refused).
func (sf *sweepFlags) check(inv invocation, args []string) (code int, ok bool) {
	f, stderr := &sf.runFlags, inv.stderr
	f.uses = inv.uses
	if unexpectedArgs(inv, args, "") {
		return runner.ExitRefused, false
	}
	if sf.olderThan <= 0 {
		fmt.Fprintf(stderr, "flowtest sweep: --older-than %s: want a positive duration, e.g. 1h or 30m\n", sf.olderThan)
		return runner.ExitRefused, false
	}
	if err := f.validate(f.uses, false); err != nil {
		return exitFor(stderr, "sweep", err), false
	}
	return 0, true
}

// sweepTarget is the target a sweep reads: the live one from configuration, or a fresh
// sandbox emulator checked by the preflight's target rules. Nil with the exit code when
// there is none.
func (s *session) sweepTarget(ctx context.Context, sandboxBin string, stderr io.Writer) (*target.Target, int) {
	if s.in.Target != safety.TargetSandbox {
		tgt, err := liveTarget(s.cfg)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
			return nil, runner.ExitRefused
		}
		return tgt, 0
	}
	bin, err := target.FindSandboxBinary(sandboxBin)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
		return nil, runner.ExitRefused
	}
	// A fresh emulator holds nothing: sweeping it proves the command, nothing more.
	tgt, err := target.StartSandbox(ctx, target.SandboxOptions{Bin: bin, WorkDir: filepath.Join(s.workDir, "sandbox"), Profile: s.cfg.Profile()})
	if err != nil {
		if ctx.Err() != nil {
			return nil, exitFor(stderr, "sweep", refusal.Interrupted("interrupted before anything was read; nothing was deleted"))
		}
		fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
		return nil, runner.ExitRefused
	}
	if rep := safety.CheckTarget(s.in.WithResolved(resolvedOf(tgt))); !rep.OK() {
		fmt.Fprintln(stderr, "flowtest sweep: refused by preflight:")
		safety.FormatViolations(stderr, rep)
		tgt.Close()
		return nil, runner.ExitRefused
	}
	return tgt, 0
}

// scopeIdentifiers are the identifiers of the scopes a sweep found, for the run's identifier
// rules.
func scopeIdentifiers(found []sweep.Scope) []safety.Identifier {
	var idents []safety.Identifier
	for _, sc := range found {
		idents = append(idents, safety.Identifier{Scenario: "sweep", Kind: safety.IdentScope, Value: sc.Head})
		for _, full := range sc.Scopes {
			idents = append(idents, safety.Identifier{Scenario: "sweep", Kind: safety.IdentScope, Value: full})
		}
	}
	return idents
}
