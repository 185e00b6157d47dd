package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// cmdCheck runs the preflight only and prints every check with PASS/FAIL. In sandbox mode
// it runs the static checks (the target checks need an emulator, which check never starts:
// run makes them); in live mode the setup checks (internal/app/preflight/livesetup.go: one
// GET of the base URL, write-free token probes, a read of the state and audit apps for
// another runner, the launchers' version, capabilities and validate of a rendered fixture,
// the kSQL-Flow config) run first, and the pending-request read (rule 9) only when every
// static check passed. Nothing is written.
func cmdCheck(inv invocation, f *checkFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	s, code := startCommand(&f.runFlags, inv, args, false)
	if s == nil {
		return code
	}
	defer s.close()
	red := s.consoleRedactor(stderr, "check")
	stdout, stderr = redactConsole(stdout, red), redactConsole(stderr, red)
	static := s.staticReport()
	rep := static
	if static.OK() && s.in.Target == safety.TargetLive {
		reader, err := pendingReader(s.cfg, s.api)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest check: %v\n", err)
			return runner.ExitRefused
		}
		r2, err := safety.Gate(context.Background(), s.in, safety.Plan{Pending: reader})
		if err != nil && !errors.Is(err, safety.ErrRefused) {
			fmt.Fprintf(stderr, "flowtest check: %v\n", err)
			return runner.ExitRefused
		}
		rep = r2
		rep.Checks = append(rep.Checks, s.needChecks()...)
		rep.Checks = append(rep.Checks, s.setupChecks()...) // run once, by staticReport
	}
	if f.json {
		// Through the console's redactor (red), as the text is.
		if err := writeJSON(inv.stdout, checkReport(string(s.in.Target), rep), red); err != nil {
			return exitFor(stderr, "check", err)
		}
		if !rep.OK() {
			return runner.ExitRefused
		}
		return runner.ExitPassed
	}
	safety.FormatReport(stdout, rep)
	if !rep.OK() {
		fmt.Fprintf(stdout, "preflight refused: %d of %d checks failed\n", len(rep.Violations()), len(rep.Checks))
		return runner.ExitRefused
	}
	fmt.Fprintf(stdout, "preflight passed: %d checks\n", len(rep.Checks))
	return runner.ExitPassed
}
