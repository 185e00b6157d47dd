package cli

import (
	"flag"
	"strings"
	"time"
)

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }

func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// runFlags are the flags of `flowtest run` and `flowtest check`.
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
	config       map[string]*string // configuration flags handed to harness/config
	uses         map[string]flagUse // the flags the user gave, with their raw values
}

var configFlags = []struct{ name, usage string }{
	{"profile", "FlowNet / kSQL-Flow profile (default e2e; prod is refused)"},
	{"base-url", "kintone base URL of a live tenant (https only)"},
	{"concurrency", "scenarios at once, an integer of at least 1 (live mode refuses anything but 1)"},
	{"flownet-dir", "kSQL-FlowNet checkout (live: the CLI is node <dir>/dist/cli/index.js)"},
	{"denylist-file", "operator-maintained production deny list"},
	{"lock-dir", "where the exclusive run lock lives"},
	{"ca-file", "extra PEM CA bundle to trust for the live tenant"},
	{"timeout-scale", "multiply every named wait limit of the steps (positive decimal, default 1; e.g. 3 for a slow live tenant)"},
	{"api-budget", "kintone requests a live run may send per app (default 5000); a run estimated above it is refused before it starts"},
}

func (f *runFlags) bind(fs *flag.FlagSet, withRun bool) {
	f.common.bind(fs)
	f.config = map[string]*string{}
	for _, cf := range configFlags {
		f.config[cf.name] = fs.String(cf.name, "", cf.usage)
	}
	fs.BoolVar(&f.allowEmpty, "allow-empty", false, "accept a selection that selects no scenario (refused otherwise)")
	if withRun {
		fs.StringVar(&f.out, "out", "test-results", "results archive root: <out>/<YYYY-MM-DD>/<HHMMSS>-<label>/")
		fs.BoolVar(&f.dryRun, "dry-run", false, "preflight and the ordered list of what would run, with reasons; nothing starts")
		fs.DurationVar(&f.stepTimeout, "step-timeout", 0, "deadline of every step, a positive duration (default 5m, times FLOWTEST_TIMEOUT_SCALE)")
		fs.Var(&f.formats, "format", "extra godog formatter (repeatable), e.g. pretty or junit:out.xml (one file per scenario)")
		fs.StringVar(&f.sutCommit, "sut-commit", "", "commit of the system under test, for the acceptance record")
		fs.BoolVar(&f.keepWorkDirs, "keep-workdirs", false, "keep scenario work dirs (unredacted logs) after the run")
		fs.StringVar(&f.shard, "shard", "", "K/N: run only shard K of a deterministic split of the selection into N shards (merge the shards' archives with `flowtest archive merge`)")
		fs.StringVar(&f.durationsDir, "durations-from", "", "archive of an earlier run whose scenario durations balance --shard and give the progress line its ETA")
		fs.DurationVar(&f.readLatency, "sandbox-read-latency", 500*time.Millisecond, "sandbox: delay of every request to the business apps (0 = a fast tenant; held windows make every scenario independent of it)")
		fs.IntVar(&f.repeat, "repeat", 1, "run the selection this many times (new scopes, a new archive each time) and report per scenario how many runs passed; exit 1 if one flaked")
	}
}

func (f *runFlags) configFlags() map[string]string {
	out := map[string]string{}
	for k, v := range f.config {
		if *v != "" {
			out[k] = *v
		}
	}
	return out
}
