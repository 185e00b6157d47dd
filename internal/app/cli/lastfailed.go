package cli

// --last-failed: the failed and the selected-but-not-run scenarios of the newest archive of
// the same selection under --out. --rerun DIR takes the failures of an archive the user names;
// --last-failed finds the archive itself and also takes what that run never reached (stopped
// by --fail-fast or an interrupt, blocked), so that "fix, then run what is left" is one flag.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/ksqlflow/flowtest/internal/results"
)

// newestArchive is the newest archive under out (<out>/<date>/<time>-<label>/, so newest is
// last by name) whose run.json match accepts, skip excepted; "" when there is none. Only
// run.json is read.
func newestArchive(out, skip string, match func(*results.Run) bool) string {
	runs, _ := filepath.Glob(filepath.Join(out, "*", "*", "run.json"))
	sort.Sort(sort.Reverse(sort.StringSlice(runs)))
	skipAbs, _ := filepath.Abs(skip)
	for _, p := range runs {
		dir := filepath.Dir(p)
		if abs, _ := filepath.Abs(dir); skip != "" && abs == skipAbs {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var run results.Run
		if json.Unmarshal(data, &run) == nil && match(&run) {
			return dir
		}
	}
	return ""
}

// sameSelection reports whether run was made by `flowtest run` with this tag expression,
// target and shard (a gate run is the gate's selection, not this one).
func sameSelection(run *results.Run, tags, target, shard string) bool {
	return run.Gate == nil && run.TagExpression == tags && run.Target == target && run.Environment["shard"] == shard
}

// resolveLastFailed makes --last-failed's selection: the archive and the scenarios of it to
// run again, refused when there is no such archive or nothing in it to run again.
func (f *runFlags) resolveLastFailed() error {
	dir := newestArchive(f.out, "", func(r *results.Run) bool { return sameSelection(r, f.tags, f.target, f.shard) })
	if dir == "" {
		return refuse("--last-failed: no archive of this selection under %s/ (the same --tags %q, --target %s and --shard %q); run it once without --last-failed", f.out, f.tags, f.target, f.shard)
	}
	ids, err := lastFailedIDs(dir)
	if err != nil {
		return refuse("--last-failed: %s: %v", dir, err)
	}
	if len(ids) == 0 {
		return refuse("--last-failed: every selected scenario passed in %s, the newest archive of this selection; nothing to run again", dir)
	}
	f.lastFailedFrom, f.lastFailedIDs = dir, ids
	return nil
}

// lastFailedIDs are the scenarios of the archive in dir that failed, were blocked or
// interrupted, or were selected and not run, in run order.
func lastFailedIDs(dir string) ([]string, error) {
	_, run, err := results.ReadVerified(dir)
	if err != nil {
		return nil, err
	}
	if run == nil {
		return nil, fmt.Errorf("no run.json")
	}
	var ids []string
	for _, s := range run.Scenarios {
		switch {
		case s.Status == results.StatusFailed, s.Status == results.StatusBlocked, s.Status == results.StatusInterrupted:
		case s.Status == results.StatusNotRun && !s.NotSelected():
		default:
			continue
		}
		ids = append(ids, s.ID)
	}
	return ids, nil
}
