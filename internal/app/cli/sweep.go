package cli

import (
	"flag"
	"fmt"
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
	fs.DurationVar(&f.olderThan, "older-than", time.Hour, "only scopes made longer ago than this (a positive duration); keep it above the longest run of a runner on another machine")
	fs.BoolVar(&f.delete, "delete", false, "delete what is listed (default: list only)")
	fs.StringVar(&f.out, "out", "test-results", "results root: the sweep record goes to <out>/<YYYY-MM-DD>/<HHMMSS>-sweep/sweep.json")
}

// cmdSweep is `flowtest sweep`: its flags, the session and the same safety preflight as run,
// the target, the identifier rules over what would be deleted, and the exit code; finding and
// deleting the leftovers is internal/sweep.
func cmdSweep(inv invocation, sf *sweepFlags, fset *flag.FlagSet, args []string) int {
	stdout, stderr, f := inv.stdout, inv.stderr, &sf.runFlags
	uses, code, ok := parseFlags(fset, "sweep", args, stderr)
	if !ok {
		return code
	}
	f.uses = uses
	if unexpectedArgs(fset, stderr, "") {
		return runner.ExitRefused
	}
	if sf.olderThan <= 0 {
		fmt.Fprintf(stderr, "flowtest sweep: --older-than %s: want a positive duration, e.g. 1h or 30m\n", sf.olderThan)
		return runner.ExitRefused
	}
	if err := f.validate(uses, false); err != nil {
		return exitFor(stderr, "sweep", err)
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
	var tgt *target.Target
	if s.in.Target == safety.TargetSandbox {
		bin, err := target.FindSandboxBinary(f.sandboxBin)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
			return runner.ExitRefused
		}
		// A fresh emulator holds nothing: sweeping it proves the command, nothing more.
		if tgt, err = target.StartSandbox(ctx, target.SandboxOptions{Bin: bin, WorkDir: filepath.Join(s.workDir, "sandbox"), Profile: s.cfg.Profile()}); err != nil {
			if ctx.Err() != nil {
				return exitFor(stderr, "sweep", refusal.Interrupted("interrupted before anything was read; nothing was deleted"))
			}
			fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
			return runner.ExitRefused
		}
		if rep := safety.CheckTarget(s.in.WithResolved(resolvedOf(tgt))); !rep.OK() {
			fmt.Fprintln(stderr, "flowtest sweep: refused by preflight:")
			safety.FormatViolations(stderr, rep)
			tgt.Close()
			return runner.ExitRefused
		}
	} else if tgt, err = liveTarget(s.cfg); err != nil {
		fmt.Fprintf(stderr, "flowtest sweep: %v\n", err)
		return runner.ExitRefused
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
	var idents []safety.Identifier
	for _, sc := range found {
		idents = append(idents, safety.Identifier{Scenario: "sweep", Kind: safety.IdentScope, Value: sc.Head})
		for _, full := range sc.Scopes {
			idents = append(idents, safety.Identifier{Scenario: "sweep", Kind: safety.IdentScope, Value: full})
		}
	}
	if err := s.checkLaterIdentifiers(idents); err != nil {
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
