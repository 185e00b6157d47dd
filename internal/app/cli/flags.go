package cli

// The run path's flags, each declared once. run, check, sweep, gate run and explore take a
// group of them (each the flags it acts on, no more), list, steps, gate show and evidence the ones that choose scenarios, and
// rehearse the ones it forwards to its live runs; every command binds its group on the flag
// set of its row in the command table (commands.go), so `-h` and `flowtest help <command>`
// print what the command parses.

import (
	"flag"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/base/flagcheck"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// multiFlag collects a repeatable flag: the one kind of flag that may be given more than
// once (tree.go's givenFlags).
type multiFlag []string

// Type is its name in the help (pflag's for a repeatable string).
func (m *multiFlag) Type() string { return "stringArray" }

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// runFlags are the values of the run path's flags.
type runFlags struct {
	common
	out          string
	dryRun       bool
	stepTimeout  time.Duration
	formats      multiFlag
	sutCommit    string
	keepWorkDirs bool
	allowEmpty   bool
	repeat       int
	readLatency  time.Duration      // sandbox: delay of every business-app request
	shard        string             // K/N
	durationsDir string             // --durations-from
	config       map[string]*string // configuration flags handed to internal/harness/config
	uses         map[string]flagUse // the flags the user gave, with their raw values
}

// common are the flags that choose the scenarios and their target.
type common struct {
	target      string
	tags        string
	envFile     string
	features    string
	rerun       string
	sandboxBin  string
	confirmedBy string

	// manifest is the run-order manifest plan loaded; knownDefects the catalogue of known
	// product defects (features/known-defects.yaml) the run path loads against it.
	manifest     *runner.Manifest
	knownDefects []results.KnownDefect
}

// configFlags are handed to internal/harness/config as they are (flags > environment > .env), so their
// values stay text; validate checks the ones a user can get wrong.
var configFlags = []struct{ name, usage string }{
	{"profile", "FlowNet / kSQL-Flow profile (default e2e; prod is refused)"},
	{"base-url", "kintone base URL of a live tenant (https only)"},
	{"concurrency", "scenarios at once, an integer of at least 1 (live mode refuses anything but 1)"},
	{"flownet-dir", "kSQL-FlowNet checkout (live: the CLI is node <dir>/dist/cli/index.js)"},
	{"product", "sandbox: the FlowNet the scenarios drive (default auto): auto (the pinned real product where Node.js allows, else the reference), real, reference, or a directory holding a FlowNet build"},
	{"node", "sandbox: the Node.js that runs the real FlowNet (default: the pinned one, else node on PATH)"},
	{"denylist-file", "operator-maintained production deny list"},
	{"lock-dir", "where the exclusive run lock lives"},
	{"ca-file", "extra PEM CA bundle to trust for the live tenant"},
	{"timeout-scale", "multiply every named wait limit of the steps (positive decimal, default 1; e.g. 3 for a slow live tenant)"},
	{"api-budget", "kintone requests a live run may send per app (default 5000); a run estimated above it is refused before it starts"},
}

// runFlagDecls declares each flag of the run path on a set, bound to its field of runFlags.
var runFlagDecls = withConfigFlags(map[string]func(f *runFlags, fs *flag.FlagSet){
	"target": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.target, "target", "sandbox", "sandbox | live (live is never implied by the environment)")
	},
	"tags": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.tags, "tags", "", "Cucumber tag expression selecting scenarios, e.g. '@m5 and not @m5-kill-unknown' (a tag no scenario carries is refused)")
	},
	"env-file": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.envFile, "env-file", ".env", "dotenv file with non-secret settings and read-only tokens (OS environment wins)")
	},
	"features": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.features, "features", "features", "directory of feature files, the run-order manifest and gates/")
	},
	"rerun": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.rerun, "rerun", "", "archive dir of an earlier run: run only the scenarios that failed there (with --tags: those of them the expression matches)")
	},
	"sandbox-bin": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.sandboxBin, "sandbox-bin", "", "path of the flowsandbox binary (default: beside flowtest, else on PATH)")
	},
	"confirmed-by": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.confirmedBy, "confirmed-by", "", "operator named as confirmer of force-unlock cleanups (live mode requires it for scenarios that need confirmer)")
	},
	"allow-empty": func(f *runFlags, fs *flag.FlagSet) {
		fs.BoolVar(&f.allowEmpty, "allow-empty", false, "accept a selection that selects no scenario (refused otherwise)")
	},
	"out": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.out, "out", "test-results", "results archive root: <out>/<YYYY-MM-DD>/<HHMMSS>-<label>/")
	},
	"dry-run": func(f *runFlags, fs *flag.FlagSet) {
		fs.BoolVar(&f.dryRun, "dry-run", false, "preflight and the ordered list of what would run, with reasons; nothing starts")
	},
	"step-timeout": func(f *runFlags, fs *flag.FlagSet) {
		fs.DurationVar(&f.stepTimeout, "step-timeout", 0, "deadline of every step, a positive duration (default 5m, times FLOWTEST_TIMEOUT_SCALE)")
	},
	"format": func(f *runFlags, fs *flag.FlagSet) {
		fs.Var(&f.formats, "format", "extra godog formatter with its file (repeatable), e.g. junit:out.xml or pretty:out/pretty.txt (one file per scenario, <file>-<id>.<ext>, redacted)")
	},
	"sut-commit": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.sutCommit, "sut-commit", "", "commit of the system under test, for the acceptance record")
	},
	"keep-workdirs": func(f *runFlags, fs *flag.FlagSet) {
		fs.BoolVar(&f.keepWorkDirs, "keep-workdirs", false, "keep scenario work dirs (unredacted logs) after the run")
	},
	"shard": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.shard, "shard", "", "run only shard K of a deterministic split of the selection into N shards, given as `K/N` (merge the shards' archives with flowtest archive merge)")
	},
	"durations-from": func(f *runFlags, fs *flag.FlagSet) {
		fs.StringVar(&f.durationsDir, "durations-from", "", "archive of an earlier run whose scenario durations balance --shard and give the progress line its ETA")
	},
	"sandbox-read-latency": func(f *runFlags, fs *flag.FlagSet) {
		fs.DurationVar(&f.readLatency, "sandbox-read-latency", 500*time.Millisecond, "sandbox: delay of every request to the business apps (0 = a fast tenant; held windows make every scenario independent of it)")
	},
	"repeat": func(f *runFlags, fs *flag.FlagSet) {
		fs.IntVar(&f.repeat, "repeat", 1, "run the selection this many times (new scopes, a new archive each time) and report per scenario how many runs passed; exit 1 if one flaked")
	},
})

// withConfigFlags adds the declarations of the configuration flags, whose values go to
// f.config by name.
func withConfigFlags(decls map[string]func(f *runFlags, fs *flag.FlagSet)) map[string]func(f *runFlags, fs *flag.FlagSet) {
	for _, cf := range configFlags {
		decls[cf.name] = func(f *runFlags, fs *flag.FlagSet) {
			if f.config == nil {
				f.config = map[string]*string{}
			}
			f.config[cf.name] = fs.String(cf.name, "", cf.usage)
		}
	}
	return decls
}

// The groups of run flags, by the commands that take them.
var (
	// commonFlagNames: the start of every group below.
	commonFlagNames = []string{"target", "tags", "env-file", "features", "rerun", "sandbox-bin", "confirmed-by"}
	// sessionFlagNames open a session (check, sweep): the configuration and the empty selection too.
	sessionFlagNames = slices.Concat(commonFlagNames, configFlagNames(), []string{"allow-empty"})
	// runFlagNames: run.
	runFlagNames = slices.Concat(sessionFlagNames, []string{"out", "dry-run", "step-timeout", "format", "sut-commit", "keep-workdirs", "shard", "durations-from", "sandbox-read-latency", "repeat"})

	// Each command takes only the flags it acts on: a flag it would ignore is refused as
	// undefined rather than accepted and dropped (check printing the concurrency of a flag
	// the run would not use, sweep taking --tags and selecting nothing).

	// listFlagNames: list.
	listFlagNames = []string{"target", "tags", "features", "rerun"}
	// checkFlagNames: check starts no sandbox (--sandbox-bin, --product, --node), takes no
	// lock (--lock-dir) and waits for nothing (--timeout-scale).
	checkFlagNames = without(sessionFlagNames, "sandbox-bin", "product", "node", "lock-dir", "timeout-scale")
	// sweepFlagNames: sweep selects and runs no scenario (--tags, --rerun, --allow-empty,
	// --confirmed-by, --concurrency, --product, --node, --timeout-scale, --api-budget) and
	// takes no run lock (--lock-dir); its --out is its own.
	sweepFlagNames = without(sessionFlagNames, "tags", "rerun", "allow-empty", "confirmed-by", "concurrency", "product", "node", "timeout-scale", "api-budget", "lock-dir")
	// gateRunFlagNames: the gate definition and its carry-over rules decide what runs.
	gateRunFlagNames = without(runFlagNames, "tags", "rerun", "allow-empty", "repeat", "shard")
	// exploreRunFlagNames: explore names its one scenario (not --tags, --rerun,
	// --allow-empty, --shard), runs it once per schedule (not --repeat), writes its own
	// report (not --format, --sut-commit) and shows no ETA (not --durations-from).
	exploreRunFlagNames = without(runFlagNames, "tags", "rerun", "allow-empty", "shard", "repeat", "format", "sut-commit", "durations-from")
)

// without is names less drop, in order.
func without(names []string, drop ...string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(drop, n) {
			out = append(out, n)
		}
	}
	return out
}

func configFlagNames() []string {
	names := make([]string, len(configFlags))
	for i, cf := range configFlags {
		names[i] = cf.name
	}
	return names
}

// bindNamed declares the named run flags on fs, bound to f.
func (f *runFlags) bindNamed(fs *flag.FlagSet, names ...string) {
	for _, n := range names {
		decl, ok := runFlagDecls[n]
		if !ok {
			panic("cli: no run flag named " + n)
		}
		decl(f, fs)
	}
}

// bind declares every flag of `flowtest run`.
func (f *runFlags) bind(fs *flag.FlagSet) { f.bindNamed(fs, runFlagNames...) }

// configFlags are the configuration flags the user gave a value.
func (f *runFlags) configFlags() map[string]string {
	out := map[string]string{}
	for k, v := range f.config {
		if *v != "" {
			out[k] = *v
		}
	}
	return out
}

// given is the text the user gave for the flag name, "" when it was not given.
func (f *runFlags) given(name string) string { return f.uses[name].last() }

// defaults gives the named run flags their declared defaults without declaring them on the
// command's set: the run path reads every run flag, and gate run and explore, which hand it
// theirs, take only some.
func (f *runFlags) defaults(names ...string) {
	f.bindNamed(flag.NewFlagSet("defaults", flag.ContinueOnError), names...)
}

// withGiven is uses (not changed) plus name given as value: a flag a command sets for the
// run path (gate run's and explore's --tags), checked as if the user had given it.
func withGiven(uses map[string]flagUse, name, value string) map[string]flagUse {
	out := map[string]flagUse{name: {flagcheck.Use{Values: []string{value}}}}
	for n, u := range uses {
		if n != name {
			out[n] = u
		}
	}
	return out
}

// setDefault gives a flag of fs another default than its declaration's (rehearse names
// itself as the confirmer).
func setDefault(fs *flag.FlagSet, name, value string) {
	fl := fs.Lookup(name)
	if err := fl.Value.Set(value); err != nil {
		panic("cli: default of --" + name + ": " + err.Error())
	}
	fl.DefValue = value
}

// checkFlags are check's: a session's that the preflight reads.
type checkFlags struct{ runFlags }

func (f *checkFlags) bind(fs *flag.FlagSet) { f.bindNamed(fs, checkFlagNames...) }

// listFlags are list's: the scenarios and their target. list reads no configuration
// (--env-file), starts nothing (--sandbox-bin) and confirms nothing (--confirmed-by).
type listFlags struct{ runFlags }

func (f *listFlags) bind(fs *flag.FlagSet) { f.bindNamed(fs, listFlagNames...) }
