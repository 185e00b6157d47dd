package cli

// Flag validation: every flag value a user can get wrong is refused here, before the
// manifest is read, before preflight and before anything starts, with exit 2 and one line
// naming the flag and the value. The rules (README "Refusals"):
//
//   - a flag given twice is refused (the flag package would keep the last silently; two
//     --tags are not an "or"), except the repeatable --format;
//   - durations positive (--step-timeout; its default 0 means "5m times the timeout scale"
//     and cannot be given explicitly), counts at least 1 (--concurrency), decimals positive
//     (--timeout-scale), formats known to godog (--format);
//   - paths: --out and --lock-dir creatable (an existing directory, or a path whose nearest
//     existing parent is a writable directory); --env-file (when named), --denylist-file,
//     --ca-file, --sandbox-bin existing files; --features, --flownet-dir, --rerun existing
//     directories;
//   - text: --profile, --confirmed-by, --sut-commit, --base-url, when given, not blank (an
//     empty `$(git rev-parse HEAD)` would otherwise drop the SUT commit silently);
//   - target-bound flags: --sandbox-bin only with the sandbox target; --base-url,
//     --flownet-dir and --ca-file only with --target live (the sandbox would ignore them,
//     and a user who passes them believes the run is against that tenant).
//
// --rerun and --tags together are allowed: the run is the scenarios that failed in the archive
// AND match the expression (an empty intersection is refused like any empty selection).

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/runner"
)

// flagUse is what the user wrote for one flag: every raw value, in order.
type flagUse struct{ values []string }

func (u flagUse) last() string {
	if len(u.values) == 0 {
		return ""
	}
	return u.values[len(u.values)-1]
}

// flagUses reads, from args that fs has parsed successfully, which flags were given and with
// which raw values. It stops where the flag package stops (the first non-flag argument or
// "--").
func flagUses(fset *flag.FlagSet, args []string) map[string]flagUse {
	uses := map[string]flagUse{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, value, hasValue := strings.Cut(name, "=")
		f := fset.Lookup(name)
		if f == nil {
			break
		}
		if !hasValue {
			if isBoolFlag(f) {
				value = "true"
			} else if i+1 < len(args) {
				i++
				value = args[i]
			}
		}
		u := uses[name]
		u.values = append(u.values, value)
		uses[name] = u
	}
	return uses
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// parseFlags parses args into fset and refuses a repeated flag. Errors of the flag package are
// printed as one line plus a pointer to -h (not the whole flag list); -h prints the flags
// and is not a refusal.
func parseFlags(fset *flag.FlagSet, name string, args []string, stderr io.Writer, repeatable ...string) (map[string]flagUse, int, bool) {
	var buf strings.Builder
	fset.SetOutput(&buf)
	fset.Usage = helpFor(fset, name)
	err := fset.Parse(args)
	fset.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stderr, buf.String())
		return nil, 0, false
	case err != nil:
		fmt.Fprintf(stderr, "flowtest %s: %v (flowtest %s -h lists the flags)\n", name, err, name)
		return nil, runner.ExitRefused, false
	}
	uses := flagUses(fset, args)
	for _, f := range sortedNames(uses) {
		u := uses[f]
		if len(u.values) > 1 && !slices.Contains(repeatable, f) {
			quoted := make([]string, len(u.values))
			for i, v := range u.values {
				quoted[i] = strconv.Quote(v)
			}
			hint := "give it once"
			if f == "tags" {
				hint = "give one expression, e.g. --tags '@m5 or @m6'"
			}
			fmt.Fprintf(stderr, "flowtest %s: --%s given %d times (%s): %s\n", name, f, len(u.values), strings.Join(quoted, ", "), hint)
			return nil, runner.ExitRefused, false
		}
	}
	return uses, 0, true
}

func sortedNames(m map[string]flagUse) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// validateCommon checks the flags every scenario command shares.
func (c *common) validate(uses map[string]flagUse) error {
	given := func(n string) bool { _, ok := uses[n]; return ok }
	if c.target != "sandbox" && c.target != "live" {
		return refuse("--target %q: want sandbox or live", c.target)
	}
	if given("env-file") {
		if err := existingFile("--env-file", c.envFile); err != nil {
			return err
		}
	}
	if err := existingDir("--features", c.features, "run flowtest from the repository root, or pass --features"); err != nil {
		return err
	}
	if given("rerun") {
		if err := existingDir("--rerun", c.rerun, "an archive folder of an earlier run"); err != nil {
			return err
		}
	}
	if given("sandbox-bin") {
		if c.target == "live" {
			return refuse("--sandbox-bin %q: the live target starts no sandbox; drop it or use --target sandbox", c.sandboxBin)
		}
		if err := existingFile("--sandbox-bin", c.sandboxBin); err != nil {
			return err
		}
	}
	if given("confirmed-by") && strings.TrimSpace(c.confirmedBy) == "" {
		return refuse("--confirmed-by %q: empty; name the operator who confirms, or leave the flag out", c.confirmedBy)
	}
	return nil
}

// validate checks the flags of run (withRun) and check.
func (f *runFlags) validate(uses map[string]flagUse, withRun bool) error {
	if err := f.common.validate(uses); err != nil {
		return err
	}
	given := func(n string) bool { _, ok := uses[n]; return ok }
	cfg := func(n string) string { return *f.config[n] }

	if given("concurrency") {
		n, err := strconv.Atoi(strings.TrimSpace(cfg("concurrency")))
		if err != nil || n < 1 {
			return refuse("--concurrency %q: want an integer of at least 1", cfg("concurrency"))
		}
	}
	if given("timeout-scale") {
		x, err := strconv.ParseFloat(strings.TrimSpace(cfg("timeout-scale")), 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return refuse("--timeout-scale %q: want a positive decimal, e.g. 3 for a slow live tenant", cfg("timeout-scale"))
		}
	}
	if given("denylist-file") {
		if err := existingFile("--denylist-file", cfg("denylist-file")); err != nil {
			return err
		}
	}
	if given("lock-dir") {
		if err := creatableDir("--lock-dir", cfg("lock-dir")); err != nil {
			return err
		}
	}
	for _, n := range []string{"profile", "base-url"} {
		if given(n) && strings.TrimSpace(cfg(n)) == "" {
			return refuse("--%s %q: empty; leave the flag out to use the default", n, cfg(n))
		}
	}
	// Live-only settings: the sandbox would silently ignore them.
	for _, n := range []string{"base-url", "flownet-dir", "ca-file"} {
		if given(n) && f.target != "live" {
			return refuse("--%s %q is a live setting and the target is the sandbox, which would ignore it: add --target live or drop it", n, cfg(n))
		}
	}
	if given("flownet-dir") {
		if err := existingDir("--flownet-dir", cfg("flownet-dir"), "a kSQL-FlowNet checkout"); err != nil {
			return err
		}
	}
	if given("ca-file") {
		if err := existingFile("--ca-file", cfg("ca-file")); err != nil {
			return err
		}
	}
	if !withRun {
		return nil
	}
	if given("step-timeout") && f.stepTimeout <= 0 {
		return refuse("--step-timeout %q: want a positive duration, e.g. 10m (leave it out for 5m times the timeout scale)", uses["step-timeout"].last())
	}
	if f.readLatency < 0 {
		return refuse("--sandbox-read-latency %q: want 0 (a fast tenant) or a positive duration, e.g. 500ms", uses["sandbox-read-latency"].last())
	}
	for _, v := range f.formats {
		if err := runner.ValidateFormat(v); err != nil {
			return refuse("%v", err)
		}
	}
	if err := creatableDir("--out", f.out); err != nil {
		return err
	}
	if given("shard") {
		if _, _, err := runner.ParseShard(f.shard); err != nil {
			return refuse("--shard %q: %v", f.shard, err)
		}
	}
	if given("durations-from") {
		if st, err := os.Stat(f.durationsDir); err != nil || !st.IsDir() {
			return refuse("--durations-from %q: not an archive directory", f.durationsDir)
		}
	}
	if given("repeat") && f.repeat < 1 {
		return refuse("--repeat %q: want an integer of at least 1", uses["repeat"].last())
	}
	if given("sut-commit") && strings.TrimSpace(f.sutCommit) == "" {
		return refuse("--sut-commit %q: empty (did the command that printed it fail?); pass the commit, or leave the flag out", f.sutCommit)
	}
	return nil
}

func existingFile(flagName, p string) error {
	st, err := os.Stat(p)
	switch {
	case strings.TrimSpace(p) == "":
		return refuse("%s %q: empty path", flagName, p)
	case errors.Is(err, fs.ErrNotExist):
		return refuse("%s %q: no such file", flagName, p)
	case err != nil:
		return refuse("%s %q: %v", flagName, p, unwrapPath(err))
	case st.IsDir():
		return refuse("%s %q: a directory, not a file", flagName, p)
	}
	return nil
}

func existingDir(flagName, p, what string) error {
	st, err := os.Stat(p)
	switch {
	case strings.TrimSpace(p) == "":
		return refuse("%s %q: empty path (%s)", flagName, p, what)
	case err != nil:
		return refuse("%s %q: not a directory (%s)", flagName, p, what)
	case !st.IsDir():
		return refuse("%s %q: not a directory (%s)", flagName, p, what)
	}
	return nil
}

// creatableDir accepts an existing writable directory, or a path whose nearest existing
// ancestor is a writable directory (it is created when needed). Writability is tried with a
// probe file that is removed at once; nothing else is created.
func creatableDir(flagName, p string) error {
	if strings.TrimSpace(p) == "" {
		return refuse("%s %q: empty path", flagName, p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return refuse("%s %q: %v", flagName, p, err)
	}
	dir := abs
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				if dir == abs {
					return refuse("%s %q: a file, not a directory", flagName, p)
				}
				return refuse("%s %q: cannot be created: %s is a file", flagName, p, dir)
			}
			break
		}
		// Missing, or a component is a file (ENOTDIR): look further up.
		parent := filepath.Dir(dir)
		if parent == dir {
			return refuse("%s %q: cannot be created: no existing parent directory", flagName, p)
		}
		dir = parent
	}
	probe, err := os.CreateTemp(dir, ".flowtest-probe-*")
	if err != nil {
		what := "is not writable"
		if dir != abs {
			what = "(its nearest existing parent " + dir + ") is not writable"
		}
		return refuse("%s %q: cannot be created: %s %s", flagName, p, p, what)
	}
	name := probe.Name()
	probe.Close()
	os.Remove(name)
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
