package cli

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/runner/tagexpr"
)

// refuse is a refusal (exit 2): nothing has started.
func refuse(format string, args ...any) error { return refusal.New(format, args...) }

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
	return runner.Plan(m, feats, sel), fsys, expr, nil
}

// exitFor maps a domain error to its exit code, printing it: a refusal exits 2, an
// interruption 130, anything else 1.
func exitFor(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "flowtest %s: %v\n", cmd, err)
	switch {
	case refusal.Is(err):
		return runner.ExitRefused
	case refusal.IsInterrupted(err):
		return runner.ExitInterrupted
	}
	return runner.ExitFailed
}

func label(tags string) string {
	if strings.TrimSpace(tags) == "" {
		return "all"
	}
	return tags
}

func cmdList(inv invocation, f *listFlags, fs *flag.FlagSet, args []string) int {
	stdout, stderr, c := inv.stdout, inv.stderr, &f.common
	uses, code, ok := parseFlags(fs, "list", args, stderr)
	if !ok {
		return code
	}
	if unexpectedArgs(fs, stderr, "") {
		return runner.ExitRefused
	}
	if err := c.validate(uses); err != nil {
		return exitFor(stderr, "list", err)
	}
	items, _, expr, err := c.plan()
	if err == nil {
		// The run's own check of the expression: a tag no scenario carries is refused here
		// as run refuses it (with the closest tags), not listed as an empty or narrowed
		// selection. An empty selection is listed: it says what run would refuse.
		if err = runner.CheckSelection(items, c.tags, expr, c.rerun, true); err != nil {
			err = refuse("%v", err)
		}
	}
	if err != nil {
		return exitFor(stderr, "list", err)
	}
	runner.WriteList(stdout, items)
	listed, implemented, extended := 0, 0, 0
	for _, it := range items {
		if it.Extended {
			extended++
		}
		if it.Filtered() {
			continue
		}
		listed++
		if it.Feature != nil {
			implemented++
		}
	}
	if listed < len(items) {
		fmt.Fprintf(stdout, "%d of %d scenarios selected, %d with a feature file, %d not implemented\n", listed, len(items), implemented, listed-implemented)
		return 0
	}
	fmt.Fprintf(stdout, "%d scenarios (%d acceptance, %d extended), %d with a feature file, %d not implemented\n", len(items), len(items)-extended, extended, implemented, len(items)-implemented)
	return 0
}
