package cli

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/app/rehearse"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// rehearseFlags are the flags of `flowtest rehearse`: the tenants' own, and the run flags it
// forwards to each tenant's live run (declared with the run path's, so they mean the same).
type rehearseFlags struct {
	runFlags
	latency time.Duration
	shards  int
}

// rehearseRunFlags are the run flags rehearse forwards; --out and --keep-workdirs are its
// own, since they name more than one run's.
var rehearseRunFlags = []string{"tags", "features", "sandbox-bin", "confirmed-by", "durations-from", "step-timeout", "timeout-scale", "allow-empty"}

func (f *rehearseFlags) bind(fs *flag.FlagSet) {
	f.bindNamed(fs, rehearseRunFlags...)
	setDefault(fs, "confirmed-by", "rehearsal") // stand-alone tenants: the rehearsal confirms its own cleanups
	durationFlag(fs, &f.latency, "latency", 0, "business-read `latency` of the stand-alone tenants (customers and deals apps): 0 = a fast tenant, e.g. 500ms = a slow one")
	intFlag(fs, &f.shards, "shards", 1, "`N` stand-alone tenants, one serial live run each over --shard i/N, all at once")
	fs.StringVar(&f.out, "out", "test-results", "archive root: <out>/<YYYY-MM-DD>/<HHMMSS>-rehearsal-<speed>-<label>/tenant-<i>/ holds each tenant's archive")
	fs.BoolVar(&f.keepWorkDirs, "keep-workdirs", false, "keep the operator envs (tokens included), emulator logs and the runs' work dirs")
}

// cmdRehearse is `flowtest rehearse` (internal/app/rehearse): its flags and selection are checked
// here, once, so that a typo is refused before any tenant starts.
func cmdRehearse(inv invocation, f *rehearseFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if unexpectedArgs(inv, args, selectWithTags) {
		return runner.ExitRefused
	}
	if err := f.validate(inv.uses); err != nil {
		return exitFor(stderr, "rehearse", err)
	}
	f.uses = inv.uses
	// The selection is checked here, once, so a typo is refused before any tenant starts;
	// there are never more tenants than scenarios (a shard without one would be refused).
	c := common{target: "live", tags: f.tags, features: f.features}
	items, _, expr, err := c.plan()
	if err == nil {
		err = runner.CheckSelection(items, f.tags, expr, "", f.allowEmpty)
		if err != nil {
			err = refuse("%v", err)
		}
	}
	if err != nil {
		return exitFor(stderr, "rehearse", err)
	}
	if sel := runner.Count(items).Runnable; sel < f.shards {
		if sel == 0 {
			sel = 1
		}
		fmt.Fprintf(stdout, "rehearse: %d scenarios can run, so %d tenants instead of %d\n", runner.Count(items).Runnable, sel, f.shards)
		f.shards = sel
	}
	sb, err := target.FindSandboxBinary(f.sandboxBin)
	if err != nil {
		return exitFor(stderr, "rehearse", refuse("%v", err))
	}
	self, err := os.Executable()
	if err != nil {
		return exitFor(stderr, "rehearse", fmt.Errorf("find the flowtest binary: %w", err))
	}
	rep, err := rehearse.Run(inv.stop, inv.now.Done(), rehearse.Options{
		Latency: f.latency, Shards: f.shards, Tags: f.tags, Label: label(f.tags), Features: f.features, Out: f.out,
		SandboxBin: sb, Self: self, ConfirmedBy: f.confirmedBy, DurationsFrom: f.durationsDir,
		StepTimeout: f.given("step-timeout"), TimeoutScale: f.given("timeout-scale"), AllowEmpty: f.allowEmpty, KeepWorkDirs: f.keepWorkDirs,
	}, stdout, stderr)
	if err != nil {
		return exitFor(stderr, "rehearse", err)
	}
	code := rehearsalCode(rep)
	// Through a redactor of the operator's environment, and leak-checked: the tenants' own
	// tokens stay in their work dirs, but a problem line quotes a live run's output.
	secrets := redact.SecretsFromEnv(envMap(os.Environ()))
	path, err := rep.Save(redact.New(secrets, nil).JSON)
	if err == nil && !filesLeakFree(stderr, []string{path}, secrets, nil) {
		err = fmt.Errorf("%s holds a secret (above)", path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "flowtest rehearse: %v\n", err)
		if code == runner.ExitPassed {
			code = runner.ExitFailed
		}
	}
	return code
}

// rehearsalCode is the exit code of a rehearsal's report: interrupted 130, else its worst
// tenant's result as a single run exits (refused 2, failed 1, nothing ran 3, clean 0).
func rehearsalCode(rep *rehearse.Report) int {
	if rep.Interrupted() {
		return runner.ExitInterrupted
	}
	switch rep.Result() {
	case rehearse.Refused:
		return runner.ExitRefused
	case rehearse.Failed:
		return runner.ExitFailed
	case rehearse.NothingRan:
		return runner.ExitNothingRan
	}
	return runner.ExitPassed
}

// validate refuses a wrong flag value before anything starts, naming the flag.
func (f *rehearseFlags) validate(uses map[string]flagUse) error {
	if f.latency < 0 {
		return refuse("--latency %s: want 0 (a fast tenant) or a positive duration, e.g. 500ms", f.latency)
	}
	if f.shards < 1 {
		return refuse("--shards %d: want at least 1", f.shards)
	}
	if err := existingDir("--features", f.features, "run flowtest from the repository root, or pass --features"); err != nil {
		return err
	}
	if err := creatableDir("--out", f.out); err != nil {
		return err
	}
	if _, given := uses["durations-from"]; given {
		if err := existingDir("--durations-from", f.durationsDir, "an archive of an earlier run"); err != nil {
			return err
		}
	}
	if _, given := uses["step-timeout"]; given && f.stepTimeout <= 0 {
		return refuse("--step-timeout %q: want a positive duration, e.g. 10m", uses["step-timeout"].last())
	}
	if _, given := uses["timeout-scale"]; given {
		scale := *f.config["timeout-scale"]
		if x, err := strconv.ParseFloat(scale, 64); err != nil || !(x > 0) || math.IsInf(x, 0) {
			return refuse("--timeout-scale %q: want a positive decimal, e.g. 3", scale)
		}
	}
	if _, given := uses["confirmed-by"]; given && strings.TrimSpace(f.confirmedBy) == "" {
		return refuse("--confirmed-by %q: empty; name the confirmer, or leave the flag out", f.confirmedBy)
	}
	// The live runs are started in the operator env directory: every path they get is
	// absolute.
	for _, p := range []*string{&f.features, &f.out, &f.durationsDir} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return refuse("%q: %v", *p, err)
		}
		*p = abs
	}
	return nil
}
