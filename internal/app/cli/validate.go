package cli

// Flag validation: every flag value a user can get wrong is refused here, before the
// manifest is read, before preflight and before anything starts, with exit 2 and one line
// naming the flag and the value. The rules (docs/running.md, "Other flags, and how bad input
// is refused"):
//
//   - a flag given twice is refused (the parser would keep the last silently; two
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
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/base/flagcheck"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// flagUse is what the user wrote for one flag (flagcheck's record), with the accessor the
// per-flag rules below use.
type flagUse struct{ flagcheck.Use }

func (u flagUse) last() string { return u.Use.Last() }

// The generic path rules, under the names the per-flag rules use.
var (
	existingFile = flagcheck.ExistingFile
	existingDir  = flagcheck.ExistingDir
	creatableDir = flagcheck.CreatableDir
)

// notTaken says why a command does not take a flag that a sibling takes (flags.go's
// groups), for the refusal of that flag: "unknown flag" alone leaves the user guessing.
var notTaken = func() map[string]map[string]string {
	why := map[string]map[string]string{}
	set := func(cmd, reason string, flags ...string) {
		if why[cmd] == nil {
			why[cmd] = map[string]string{}
		}
		for _, f := range flags {
			why[cmd][f] = reason
		}
	}
	set("gate run", "the gate definition and its carry-over rules decide what runs", "tags", "rerun", "allow-empty", "repeat", "shard", "last-failed")
	set("sweep", "sweep selects and runs no scenario; it lists (with --delete removes) what dead runs left on the target",
		"tags", "rerun", "allow-empty", "confirmed-by", "concurrency", "product", "node", "timeout-scale", "api-budget")
	set("sweep", "sweep takes no run lock", "lock-dir")
	set("explore", "explore runs the one scenario it names", "tags", "rerun", "allow-empty", "shard", "last-failed")
	set("explore", "explore runs its scenario once per schedule (--schedules, --time)", "repeat")
	set("explore", "explore runs every schedule to judge it (--schedules, --time)", "fail-fast")
	set("explore", "explore writes its own report (explore.json, index.html) and run archives", "format", "sut-commit")
	set("check", "check starts no sandbox", "sandbox-bin", "product", "node")
	set("check", "check takes no run lock", "lock-dir")
	set("check", "check waits for nothing", "timeout-scale")
	set("list", "list reads no configuration and starts nothing", "env-file", "sandbox-bin", "confirmed-by")
	return why
}()

// selectWithTags is the hint of a scenario command given arguments: scenarios are chosen with
// --tags, not named.
const selectWithTags = " (select scenarios with --tags)"

// unexpectedArgs refuses the positional arguments of a command that takes none, naming
// them and adding hint; it reports whether there were any.
func unexpectedArgs(inv invocation, args []string, hint string) bool {
	if len(args) == 0 {
		return false
	}
	fmt.Fprintf(inv.stderr, "flowtest %s: unexpected arguments %q%s\n", inv.name, args, hint)
	return true
}

// refuseUsage refuses a command's positional arguments with its usage line (invocation.usage).
func refuseUsage(stderr io.Writer, usage string) int {
	fmt.Fprintf(stderr, "usage: flowtest %s\n", usage)
	return runner.ExitRefused
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
	if err := validateSettings(given, cfg); err != nil {
		return err
	}
	if err := f.validateTargetSettings(given, cfg); err != nil {
		return err
	}
	if !withRun {
		return nil
	}
	return f.validateRun(uses, given)
}

// validateSettings checks the values of the configuration flags both targets take: numbers,
// the deny list, the lock dir, and no empty profile or base URL.
func validateSettings(given func(string) bool, cfg func(string) string) error {
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
	return nil
}

// validateTargetSettings checks the settings of one target (refused on the other, which would
// ignore them) and the files and folders they name.
func (f *runFlags) validateTargetSettings(given func(string) bool, cfg func(string) string) error {
	// Live-only settings: the sandbox would silently ignore them.
	for _, n := range []string{"base-url", "flownet-dir", "ca-file"} {
		if given(n) && f.target != "live" {
			return refuse("--%s %q is a live setting and the target is the sandbox, which would ignore it: add --target live or drop it", n, cfg(n))
		}
	}
	// Sandbox-only settings: a live run drives the FlowNet of FLOWTEST_FLOWNET_DIR.
	for _, n := range []string{"product", "node"} {
		if given(n) && f.target == "live" {
			return refuse("--%s %q chooses the sandbox's FlowNet; a live run drives the one --flownet-dir (FLOWTEST_FLOWNET_DIR) names: drop it or use --target sandbox", n, cfg(n))
		}
	}
	if given("product") {
		switch p := strings.TrimSpace(cfg("product")); p {
		case target.ProductAuto, target.ProductReal, target.ProductReference:
		case "":
			return refuse("--product %q: empty; want auto, real, reference or a FlowNet build's directory", cfg("product"))
		default:
			if err := existingDir("--product", p, "a kSQL-FlowNet build (auto, real, reference or its directory)"); err != nil {
				return err
			}
		}
	}
	if given("node") {
		if err := existingFile("--node", cfg("node")); err != nil {
			return err
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
	return nil
}

// validateRun checks the flags only run takes: the step deadline, the sandbox's latency,
// the outputs, the selection's --rerun, --shard, --durations-from and --repeat, the SUT.
func (f *runFlags) validateRun(uses map[string]flagUse, given func(string) bool) error {
	if f.lastFailed && given("rerun") {
		return refuse("--last-failed with --rerun %q: give one (--rerun names the archive, --last-failed finds the newest of this selection)", f.rerun)
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
	if given("rerun") {
		// The new archive would be written into the one whose failures it reruns.
		if err := flagcheck.NotInside("--out", f.out, []string{f.rerun}, "the --rerun archive"); err != nil {
			return err
		}
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
