package cli

// flowtest coverage: which scenarios' assertions read each subject the product writes
// (internal/results/coverage, docs/coverage.md), from a full run's archive, and what no
// assertion reads; and coverage.json, the same map written into a full run's archive.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/coverage"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// coverageFlags are the flags of `flowtest coverage`; --features locates docs/coverage.md
// (beside the features folder) and --out the archives to pick the newest full run from.
type coverageFlags struct {
	runFlags
	archive string
	asJSON  bool
}

func (f *coverageFlags) bind(fs *flag.FlagSet) {
	f.bindNamed(fs, "features", "out")
	fs.StringVar(&f.archive, "archive", "", "archive to read (default: the newest full-run archive under --out)")
	fs.BoolVar(&f.asJSON, "json", false, "print the map as JSON (coverage.schema.json)")
}

func cmdCoverage(inv invocation, f *coverageFlags, args []string) int {
	if unexpectedArgs(inv, args, "") {
		return runner.ExitRefused
	}
	dir := f.archive
	if dir == "" {
		if dir = newestFullRun(f.out); dir == "" {
			fmt.Fprintf(inv.stderr, "flowtest coverage: no full-run archive under %s (run the whole suite, or give --archive)\n", f.out)
			return runner.ExitRefused
		}
	}
	reasons, err := coverageReasons(f.features)
	if err != nil {
		return exitFor(inv.stderr, "coverage", err)
	}
	recs, _, err := results.ReadVerified(dir)
	if err != nil {
		return exitFor(inv.stderr, "coverage", err)
	}
	m := coverage.Build(recs, reasons)
	m.Archive = dir
	if f.asJSON {
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return exitFor(inv.stderr, "coverage", err)
		}
		fmt.Fprintln(inv.stdout, string(data))
	} else if err := m.WriteText(inv.stdout); err != nil {
		return exitFor(inv.stderr, "coverage", err)
	}
	if m.Failed() {
		return runner.ExitFailed
	}
	return runner.ExitPassed
}

// coverageReasons reads docs/coverage.md, the folder beside the features folder.
func coverageReasons(features string) (coverage.Reasons, error) {
	p := filepath.Join(features, "..", "docs", "coverage.md")
	md, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("the reasons for unread subjects: %w", err)
	}
	return coverage.ParseReasons(md)
}

// newestFullRun is the newest archive under out whose run selected the whole suite (no tag
// expression, none left out), "" when there is none. Only run.json is read.
func newestFullRun(out string) string { return newestArchive(out, "", fullSuite) }

// fullSuite: the run selected every scenario of the suite and one of them ran.
func fullSuite(run *results.Run) bool {
	return run.TagExpression == "" && run.Totals.NotSelected == 0 && run.Totals.Total > run.Totals.NotRun
}

// writeCoverage writes coverage.json into the archive of a full run (through the archive's
// redacting writer) and prints its count line; a narrower run's map would call most
// subjects unread, so it writes none.
func writeCoverage(w io.Writer, arch *results.Archive, run *results.Run, recs []*results.Scenario, features string) error {
	if !fullSuite(run) {
		return nil
	}
	reasons, err := coverageReasons(features)
	if err != nil {
		return err
	}
	m := coverage.Build(recs, reasons)
	data, err := json.Marshal(m)
	if err != nil {
		return errors.Join(errors.New("encode "+results.CoverageFile), err)
	}
	if err := arch.WriteFile(results.CoverageFile, data); err != nil {
		return err
	}
	fmt.Fprintf(w, "coverage: %d of %d subjects read, %d unread (%d without a reason in docs/coverage.md) — %s\n",
		m.Read, len(m.Subjects), m.Unread, len(m.Undocumented), results.CoverageFile)
	return nil
}
