package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// repeatRuns is `run --repeat N` (flake hunting): the selection N times, each time with new
// scopes (checked by the same preflight identifier and fixture rules) and into an archive of
// its own (label "<label>-repeat<r>of<N>"), then per scenario how many runs passed. A
// scenario that passed some runs and not others is flaky: it is listed with the reason of
// each run it did not pass, and the exit code is 1.
func (s *session) repeatRuns(ctx context.Context, tgt *target.Target, stdout io.Writer) int {
	n := s.flags.repeat
	type tally struct {
		ran, passed int
		failures    []string
	}
	tallies := map[string]*tally{}
	var archives []string
	interrupted := false
	for r := 1; r <= n && !interrupted; r++ {
		if r > 1 {
			if err := s.freshScopes(r); err != nil {
				fmt.Fprintf(stdout, "flowtest run: repeat %d of %d: %v\n", r, n, err)
				return runner.ExitFailed
			}
		}
		fmt.Fprintf(stdout, "=== repeat %d of %d\n", r, n)
		code, res := s.executeOnce(ctx, tgt, stdout, fmt.Sprintf("%s-repeat%dof%d", s.runLabel(), r, n))
		if code == runner.ExitRefused && len(res.Scenarios) == 0 {
			return code
		}
		interrupted = res.Interrupted || code == runner.ExitInterrupted
		for _, rec := range res.Scenarios {
			if rec == nil || rec.Status == results.StatusNotRun {
				continue
			}
			t := tallies[rec.ID]
			if t == nil {
				t = &tally{}
				tallies[rec.ID] = t
			}
			t.ran++
			if rec.Status == results.StatusPassed {
				t.passed++
			} else {
				t.failures = append(t.failures, fmt.Sprintf("run %d: %s — %s", r, rec.Status, rec.ReasonLine()))
			}
		}
		archives = append(archives, fmt.Sprint(r))
	}

	fmt.Fprintf(stdout, "\nrepeat: %d run(s) of the selection; passed per scenario:\n", len(archives))
	var flaky, failing int
	for _, it := range s.items {
		t := tallies[it.ID]
		if t == nil {
			continue
		}
		verdict := "stable"
		switch {
		case t.passed == t.ran:
		case t.passed == 0:
			verdict = "failed every run"
			failing++
		default:
			verdict = "FLAKY"
			flaky++
		}
		fmt.Fprintf(stdout, "  %-32s %d/%d passed  %s\n", it.ID, t.passed, t.ran, verdict)
		if verdict == "FLAKY" {
			for _, f := range t.failures {
				fmt.Fprintf(stdout, "      %s\n", f)
			}
		}
	}
	fmt.Fprintf(stdout, "repeat: %d flaky, %d failed every run, %d scenarios ran\n", flaky, failing, len(tallies))
	switch {
	case interrupted:
		return runner.ExitInterrupted
	case flaky > 0 || failing > 0:
		return runner.ExitFailed
	case len(tallies) == 0:
		return runner.ExitNothingRan
	}
	return runner.ExitPassed
}

// freshScopes makes new scopes (and renders their fixtures) for repetition r and applies the
// preflight's identifier and fixture rules to them before anything uses them.
func (s *session) freshScopes(r int) error {
	fixtures, err := filepath.Abs(filepath.Join(s.flags.features, "fixtures"))
	if err != nil {
		return err
	}
	p, err := prepare(s.items, fixtures, s.cfg.Profile(), filepath.Join(s.workDir, fmt.Sprintf("preflight-%d", r)), s.flags.confirmedBy)
	if err != nil {
		return fmt.Errorf("new scopes: %w", err)
	}
	if err := violations("identifiers", safety.CheckIdentifiers(s.in, p.idents)); err != nil {
		return err
	}
	if err := violations("fixtures", safety.CheckFixtures(s.in, p.fixtures)); err != nil {
		return err
	}
	if s.work != nil {
		if err := s.work.AddScopes(p.scopeIDs()...); err != nil {
			return err
		}
	}
	s.prep = p
	return nil
}
