package cli

// flowtest archive merge A B …: one archive and acceptance record from the archives of the
// shards of one selection (`run --shard K/N`), with the checks of a single run: the shards
// belong together and do not overlap, every scenario has a record or a reason, the totals
// add up, and the merged archive passes the leak scan with the current environment's
// secrets. Exit: as the merged run would have exited (0, 1, 3, 130), 2 when refused.

import (
	"flag"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	"github.com/ksqlflow/flowtest/internal/base/flagcheck"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/merge"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/runner"
)

// mergeFlags are the flags of `flowtest archive merge`.
type mergeFlags struct {
	archiveFlags
	out string
}

func (f *mergeFlags) bind(fs *flag.FlagSet) {
	f.archiveFlags.bind(fs)
	fs.StringVar(&f.out, "out", "test-results", "archive root of the merged archive: <out>/<YYYY-MM-DD>/<HHMMSS>-merged-<label>/")
}

func cmdMerge(inv invocation, f *mergeFlags, args []string) int {
	stdout, stderr := inv.stdout, inv.stderr
	if !archiveArgs(inv, args, 2, -1) {
		return runner.ExitRefused
	}
	if err := creatableDir("--out", f.out); err != nil {
		return exitFor(stderr, "archive merge", err)
	}
	// The merged archive would land inside a shard and change the input it was merged from.
	if err := flagcheck.NotInside("--out", f.out, args, "the shard archive"); err != nil {
		return exitFor(stderr, "archive merge", err)
	}
	env, appIDs, err := f.scanInputs(inv.uses)
	if err != nil {
		return exitFor(stderr, "archive merge", err)
	}
	var in []merge.MergeInput
	sources := map[string][]byte{} // the shards' feature texts, for the merged messages.ndjson
	for _, dir := range args {
		// Every shard is verified before any is merged: a record that says failed where
		// run.json says passed would otherwise make a merged run.json that says passed.
		scen, run, err := results.ReadVerified(dir)
		if err == nil {
			var src map[string][]byte
			src, err = results.FeatureSources(dir)
			maps.Copy(sources, src)
		}
		if err != nil {
			fmt.Fprintf(stderr, "flowtest archive merge: refused: %v\n", err)
			return runner.ExitRefused
		}
		in = append(in, merge.MergeInput{Dir: dir, Run: run, Scenarios: scen})
	}
	merged, err := merge.Merge(in)
	if err != nil {
		fmt.Fprintf(stderr, "flowtest archive merge: refused: %v\n", err)
		return runner.ExitRefused
	}
	if err := inv.stopped("the merged archive"); err != nil {
		return exitFor(stderr, "archive merge", err)
	}
	secrets := redact.SecretsFromEnv(env)
	arch, err := results.Create(f.out, "merged-"+label(merged.Run.TagExpression), time.Now(), redact.New(secrets, nil))
	if err != nil {
		fmt.Fprintf(stderr, "flowtest archive merge: --out %q: %v\n", f.out, err)
		return runner.ExitRefused
	}
	arch.SetOrder(merged.Run.RunOrder)
	arch.SetFeatureSources(sources)
	for _, s := range merged.Scenarios {
		if err := arch.WriteScenario(s); err != nil {
			fmt.Fprintf(stderr, "flowtest archive merge: %v\n", err)
			return runner.ExitFailed
		}
	}
	merged.Run.Command = append([]string{"flowtest", "archive", "merge"}, args...)
	if merged.Run.Environment == nil {
		merged.Run.Environment = map[string]string{}
	}
	var shards []string
	for _, a := range in {
		abs, _ := filepath.Abs(a.Dir)
		shards = append(shards, abs)
	}
	merged.Run.Environment["merged_from"] = fmt.Sprint(shards)
	if err := arch.Finish(merged.Run); err != nil {
		fmt.Fprintf(stderr, "flowtest archive merge: %v\n", err)
		return runner.ExitFailed
	}
	fmt.Fprintf(stdout, "%s — merged archive %s (from %d shards)\n", results.RunTotalsText(merged.Run), arch.Dir(), len(in))
	for _, line := range results.StaleKnownDefects(merged.Run.Scenarios) {
		fmt.Fprintf(stdout, "WARNING: %s\n", line)
	}
	switch {
	case !leakFree(stdout, arch.Dir(), secrets, appIDs):
		return runner.ExitFailed
	case !archiveWhole(stdout, arch.Dir()):
		return runner.ExitFailed
	}
	fmt.Fprintf(stdout, "archive verify: no secret or raw app id in %s\n", arch.Dir())
	if schemaProblems(arch.Dir(), stdout, stderr) {
		return runner.ExitFailed
	}
	return *merged.Run.ExitCode
}
