package cli

// The selection every scenario command starts from: manifest, feature files, tags, --rerun.

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/runner/tagexpr"
)

// plan loads the manifest and feature files and selects what runs. Every malformed input
// (tag expression, manifest, feature file, --rerun archive) is a refusal naming the file and
// line; nothing has started yet.
func (c *common) plan() ([]runner.Item, fs.FS, tagexpr.Expr, error) {
	if c.target != "sandbox" && c.target != "live" {
		return nil, nil, tagexpr.Expr{}, refuse("--target %q: want sandbox or live", c.target)
	}
	expr, err := tagexpr.Parse(c.tags)
	if err != nil {
		return nil, nil, expr, refuse("--tags %q: %v", c.tags, err)
	}
	st, err := os.Stat(c.features)
	if err != nil || !st.IsDir() {
		return nil, nil, expr, refuse("--features %q: not a directory (run flowtest from the repository root, or pass --features)", c.features)
	}
	fsys := os.DirFS(c.features)
	// Read here rather than through fsys so that errors name the file as the operator knows
	// it (features/manifest.yaml:12).
	manifest := filepath.Join(c.features, "manifest.yaml")
	data, err := os.ReadFile(manifest)
	if err != nil {
		return nil, nil, expr, refuse("read the run-order manifest: %v", err)
	}
	m, err := runner.ParseManifest(manifest, data)
	if err != nil {
		return nil, nil, expr, refuse("%v", err)
	}
	c.manifest = m
	feats, err := runner.DiscoverNamed(fsys, ".", m, c.features)
	if err != nil {
		return nil, nil, expr, refuse("%v", err)
	}
	sel := runner.Selection{Expr: expr, GOOS: runtime.GOOS}
	if c.rerun != "" {
		failed, err := results.FailedScenarios(c.rerun)
		if err != nil {
			return nil, nil, expr, refuse("--rerun %q: %v", c.rerun, err)
		}
		if err := runner.CheckRerun(m, c.rerun, failed); err != nil {
			return nil, nil, expr, refuse("%v", err)
		}
		sel.Rerun = map[string]bool{}
		for _, id := range failed {
			sel.Rerun[id] = true
		}
	}
	if c.lastFailedIDs != nil {
		sel.Rerun = map[string]bool{}
		for _, id := range c.lastFailedIDs {
			sel.Rerun[id] = true
		}
	}
	return runner.Plan(m, feats, sel), fsys, expr, nil
}

func label(tags string) string {
	if strings.TrimSpace(tags) == "" {
		return "all"
	}
	return tags
}
