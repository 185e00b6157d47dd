package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ksqlflow/flowtest/internal/app/defects"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// defectsFlags are the flags of `flowtest defects`.
type defectsFlags struct {
	only                  multiFlag
	fast, keep, noControl bool
	goBin, controlFrom    string
	jobs                  int
}

func (f *defectsFlags) bind(fs *flag.FlagSet) {
	fs.Var(&f.only, "only", "run only these defects (comma-separated or repeated names)")
	fs.BoolVar(&f.fast, "fast", false, "run only the defects marked fast (the CI subset)")
	fs.StringVar(&f.goBin, "go", "go", "the go command that builds the broken sandboxes")
	fs.BoolVar(&f.keep, "keep", false, "keep the work dir (broken binaries, run logs, archives) even when every defect is caught")
	fs.BoolVar(&f.noControl, "no-control", false, "skip the control run of the declared scenarios on the correct sandbox")
	fs.StringVar(&f.controlFrom, "control-from", "", "take the control from this `archive` of a flowtest run on the correct sandbox of this checkout instead of running it again")
	intFlag(fs, &f.jobs, "jobs", defects.DefaultJobs, "`N` defects checked at once (each builds its own sandbox and runs its own emulator)")
}

func cmdDefects(inv invocation, f *defectsFlags, args []string) int {
	stdout, stderr, ctx := inv.stdout, inv.stderr, inv.stop
	if unexpectedArgs(inv, args, "") {
		return runner.ExitRefused
	}
	if f.jobs < 1 {
		fmt.Fprintf(stderr, "flowtest defects: --jobs %d: at least 1\n", f.jobs)
		return runner.ExitRefused
	}
	root, err := defects.ModuleRoot(f.goBin)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: %v\n", err)
		return runner.ExitRefused
	}
	m, all, err := loadDefects(root)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: %v\n", err)
		return runner.ExitRefused
	}
	selected, err := defects.Select(all, f.only, f.fast)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: %v\n", err)
		return runner.ExitRefused
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: find this executable: %v\n", err)
		return runner.ExitRefused
	}
	work, err := os.MkdirTemp("", "flowtest-defects-")
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: %v\n", err)
		return runner.ExitFailed
	}
	defer context.AfterFunc(ctx, func() { fmt.Fprintln(stderr, "flowtest defects: interrupted; stopping the current run") })()
	r := &defects.Run{Root: root, GoBin: f.goBin, Self: self, Work: work, Log: &runner.LockedWriter{W: stdout}, Ctx: ctx}
	start := time.Now()
	fmt.Fprintf(stdout, "flowtest defects: %d of %d planted defects (%s), work dir %s\n", len(selected), len(all), defects.CatalogueFile, work)

	control, ok := f.control(r, selected, stderr)
	if !ok {
		return runner.ExitRefused
	}
	needs := map[string]runner.Needs{}
	for _, e := range m.Scenarios {
		needs[e.ID] = e.Needs
	}
	rows := append(control, r.All(selected, !f.noControl && f.controlFrom == "", f.jobs, defects.LongestFirst(selected, control, needs))...)
	fmt.Fprintln(stdout)
	defects.WriteTable(stdout, rows)

	caught, escaped, pending, controlBad := countVerdicts(selected, rows)
	fmt.Fprintf(stdout, "\n%d caught, %d escaped, %d not yet covered by a scenario; wall time %s\n", caught, escaped, pending, time.Since(start).Round(100*time.Millisecond))
	code := runner.ExitPassed
	switch {
	case ctx.Err() != nil:
		code = runner.ExitInterrupted
	case controlBad:
		fmt.Fprintln(stdout, "the control run failed: a scenario that fails on the correct sandbox proves nothing about a defect")
		code = runner.ExitFailed
	case escaped > 0:
		code = runner.ExitFailed
	}
	if code != runner.ExitPassed || f.keep {
		fmt.Fprintf(stdout, "work dir kept (run logs, archives, broken binaries): %s\n", work)
	} else {
		os.RemoveAll(work)
	}
	return code
}

// control is the control rows --control-from takes from an archive (none without it);
// false, said on stderr, when they cannot be had or --no-control contradicts it.
func (f *defectsFlags) control(r *defects.Run, selected []defects.Defect, stderr io.Writer) ([]defects.Row, bool) {
	if f.controlFrom != "" && f.noControl {
		fmt.Fprintln(stderr, "flowtest defects: --control-from and --no-control exclude each other")
		return nil, false
	}
	if f.controlFrom == "" {
		return nil, true
	}
	rows, err := r.ControlFromArchive(f.controlFrom, selected)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest defects: --control-from %s: %v\n", f.controlFrom, err)
		return nil, false
	}
	return rows, true
}

// loadDefects is the checkout's manifest and its catalogue of planted defects, checked
// against it: every scenario a defect names exists, and one explored is explorable.
func loadDefects(root string) (*runner.Manifest, []defects.Defect, error) {
	m, err := runner.LoadManifest(os.DirFS(filepath.Join(root, "features")), "manifest.yaml")
	if err != nil {
		return nil, nil, err
	}
	known, explorable := map[string]bool{}, map[string]bool{}
	for _, e := range m.Scenarios {
		known[e.ID] = true
		explorable[e.ID] = e.Explorable() // a redirect's source is not: its catch names the sibling
	}
	cat, err := defects.LoadCatalogue(filepath.Join(root, defects.CatalogueFile), known)
	if err == nil {
		err = defects.CheckExplorable(cat.Defects, explorable)
	}
	if err != nil {
		return nil, nil, err
	}
	return m, cat.Defects, nil
}

// countVerdicts counts the selected defects by their verdict over rows, and says whether a
// control run failed (the defects' verdict count, which decides the exit code).
func countVerdicts(selected []defects.Defect, rows []defects.Row) (caught, escaped, pending int, controlBad bool) {
	for _, d := range selected {
		switch defects.VerdictOf(d.Name, rows) {
		case defects.VerdictCaught:
			caught++
		case defects.VerdictNotCovered:
			pending++
		default:
			escaped++
		}
	}
	for _, row := range rows {
		if row.Verdict == defects.VerdictControlBad {
			controlBad = true
		}
	}
	return caught, escaped, pending, controlBad
}
