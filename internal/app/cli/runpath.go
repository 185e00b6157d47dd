package cli

// The run path: preflight, lock, target and execution, for `flowtest run` and for the
// commands that hand it their run flags (gate run, explore).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/harness/runlock"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// runWith is the run path over the run flags of a command (flags, given as inv.uses) and
// its arguments (none), under the command's name (inv.name); extras is what gate run and
// explore add (the gate record, the exploration).
func runWith(flags *runFlags, inv invocation, args []string, extras runExtras) int {
	stdout, stderr, name := inv.stdout, inv.stderr, inv.name
	s, code := startCommand(flags, inv, args, true)
	if s == nil {
		return code
	}
	s.extras = extras
	s.stop, s.now = inv.stop, inv.now
	defer s.close()
	s.tty = terminalOf(stdout)                    // before the redactor hides the file behind a writer
	stdout = colourConsole(stdout, flags.noColor) // under the redactor: it colours redacted lines
	red := s.consoleRedactor(stderr, name)
	stdout, stderr = redactConsole(stdout, red), redactConsole(stderr, red)
	f := s.flags
	if _, given := f.uses["lock-dir"]; !given { // the flag was checked with the others
		if err := creatableDir(config.VarLockDir, s.cfg.LockDir()); err != nil {
			return exitFor(stderr, "run", err)
		}
	}

	static := s.staticReport()
	if f.dryRun {
		return s.dryRun(stdout, static)
	}
	if !static.OK() {
		fmt.Fprintln(stderr, "flowtest run: refused by preflight; nothing was started:")
		safety.FormatViolations(stderr, static)
		return runner.ExitRefused
	}
	if s.in.Target == safety.TargetSandbox {
		bin, err := target.FindSandboxBinary(f.sandboxBin)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest run: %v\n", err)
			return runner.ExitRefused
		}
		s.bin = bin
	}
	return s.gatedRun(stdout, stderr)
}

// dryRun is --dry-run: the static preflight and the run order, and the exit the run would
// have before its first scenario.
func (s *session) dryRun(stdout io.Writer, static safety.Report) int {
	fmt.Fprintln(stdout, "Preflight:")
	safety.FormatReport(stdout, static)
	fmt.Fprintln(stdout, "\nRun order:")
	runner.WritePlan(stdout, s.items)
	if !static.OK() {
		return runner.ExitRefused
	}
	// The dry run exits as the run would before its first scenario: nothing would run.
	if code := runner.PlanCode(s.items); code != runner.ExitPassed {
		fmt.Fprintf(stdout, "nothing would run: every selected scenario is not implemented or needs another platform (exit %d)\n", code)
		return code
	}
	return runner.ExitPassed
}

// gatedRun executes the session through the safety gate: the target resolved (the sandbox
// started, or the live one from configuration) and checked before anything starts on it.
func (s *session) gatedRun(stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tgt *target.Target
	defer func() {
		if tgt != nil {
			if err := tgt.Close(); err != nil {
				fmt.Fprintf(stderr, "flowtest run: %v\n", err)
			}
		}
	}()
	code := runner.ExitPassed
	plan := safety.Plan{
		Start: func(ctx context.Context, in safety.Input) error {
			if tgt == nil { // live: resolved from configuration
				t, err := liveTarget(s.cfg)
				if err != nil {
					return err
				}
				tgt = t
			}
			c, err := s.lockedExecute(ctx, tgt, stdout, stderr)
			if err == nil {
				code = c
			}
			return err
		},
	}
	if s.in.Target == safety.TargetSandbox {
		product, err := s.product(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest run: %v\n", err)
			return runner.ExitRefused
		}
		plan.Resolve = func(ctx context.Context) (safety.Resolved, error) {
			t, err := target.StartSandbox(ctx, target.SandboxOptions{
				Bin: s.bin, WorkDir: filepath.Join(s.workDir, "sandbox"), Profile: s.cfg.Profile(),
				Latency: sandboxLatency(s.flags.readLatency), Log: stdout, Product: product,
			})
			if err != nil {
				return safety.Resolved{}, err
			}
			tgt = t
			return resolvedOf(t), nil
		}
	} else {
		reader, err := pendingReader(s.cfg, s.api)
		if err != nil {
			fmt.Fprintf(stderr, "flowtest run: %v\n", err)
			return runner.ExitRefused
		}
		plan.Pending = reader
	}
	rep, err := safety.Gate(ctx, s.in, plan)
	if err != nil {
		if errors.Is(err, safety.ErrRefused) {
			fmt.Fprintln(stderr, "flowtest run: refused by preflight; no scenario was started:")
			safety.FormatViolations(stderr, rep)
		} else {
			fmt.Fprintf(stderr, "flowtest run: %v\n", err)
		}
		return runner.ExitRefused
	}
	return code
}

// lockedExecute executes the session on tgt under the environment's run lock: serial
// execution is a safety rule, one runner per environment. A lock held elsewhere is a refusal.
func (s *session) lockedExecute(ctx context.Context, tgt *target.Target, stdout, stderr io.Writer) (int, error) {
	var ids []string
	for id := range tgt.AppRoles() {
		ids = append(ids, id)
	}
	lock, err := runlock.Acquire(runlock.Options{
		Dir: s.cfg.LockDir(), BaseURL: tgt.BaseURL, AppIDs: ids,
		Warn: func(msg string) { fmt.Fprintf(stderr, "flowtest run: warning: %s\n", msg) },
	})
	if err != nil {
		return 0, refuse("%v", err)
	}
	defer lock.Release()
	return s.execute(ctx, tgt, stdout), nil
}
