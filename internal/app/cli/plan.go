package cli

import (
	"fmt"

	"github.com/ksqlflow/flowtest/internal/runner"
)

func cmdList(inv invocation, f *listFlags, args []string) int {
	stdout, stderr, c := inv.stdout, inv.stderr, &f.common
	if unexpectedArgs(inv, args, "") {
		return runner.ExitRefused
	}
	if err := c.validate(inv.uses); err != nil {
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
	if f.json {
		if err := writeJSON(stdout, listReport(items), nil); err != nil {
			return exitFor(stderr, "list", err)
		}
		return 0
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
