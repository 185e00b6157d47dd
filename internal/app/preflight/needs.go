package preflight

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// needing lists, in run order, the selected scenarios whose manifest entry declares need.
func needing(items []runner.Item, need runner.Need) []string {
	var ids []string
	for _, it := range items {
		if it.Run && it.Needs.Has(need) {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// ConfirmerCheck is the preflight rule of the confirmer need: a selected scenario that kills a
// kSQL-Flow child and force-unlocks its job lock needs, in live mode, a named confirmer
// (--confirmed-by or M5_FORCE_UNLOCK_CONFIRMED_BY) before anything starts.
func ConfirmerCheck(target safety.Target, items []runner.Item, confirmer string) safety.Check {
	c := safety.Check{Name: "kill-confirmer", Subject: "--confirmed-by", OK: true, Reason: "no selected scenario needs a confirmer"}
	ids := needing(items, runner.NeedConfirmer)
	switch {
	case len(ids) == 0:
	case confirmer != "":
		c.Reason = "force-unlock cleanups confirmed by " + confirmer
	case target == safety.TargetLive:
		c.OK, c.Reason = false, "live scenarios needing a confirmer ("+strings.Join(ids, ", ")+") need a named confirmer: --confirmed-by or M5_FORCE_UNLOCK_CONFIRMED_BY"
	default:
		c.Reason = "sandbox: the scope's principal confirms"
	}
	return c
}

// IODirCheck is the preflight rule of the csv-io need (scenarios.md §3.4): in live mode the
// per-scope CSV IO roots are made under KSQL_FLOWNET_IO_DIR, which must be an existing
// absolute directory. stat is os.Stat (injected for tests).
func IODirCheck(target safety.Target, items []runner.Item, dir string, stat func(string) (os.FileInfo, error)) safety.Check {
	c := safety.Check{Name: "csv-io-dir", Subject: config.VarIODir, OK: true, Reason: "no selected scenario needs csv-io"}
	ids := needing(items, runner.NeedCSVIO)
	who := "csv-io scenarios (" + strings.Join(ids, ", ") + ")"
	switch {
	case len(ids) == 0:
	case target != safety.TargetLive:
		c.Reason = "sandbox: not checked (a live setting)"
	case strings.TrimSpace(dir) == "":
		c.OK, c.Reason = false, who+" need it: an existing absolute directory for the per-scope IO roots"
	case !filepath.IsAbs(dir):
		c.OK, c.Reason = false, fmt.Sprintf("%q is not an absolute path (%s need an existing absolute directory)", dir, who)
	default:
		st, err := stat(dir)
		switch {
		case err != nil:
			c.OK, c.Reason = false, fmt.Sprintf("%s need an existing directory: %v", who, err)
		case !st.IsDir():
			c.OK, c.Reason = false, fmt.Sprintf("%q is not a directory (%s need one)", dir, who)
		default:
			c.Reason = fmt.Sprintf("%s for %s", dir, who)
		}
	}
	return c
}
