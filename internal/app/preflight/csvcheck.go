package preflight

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/config"
	"github.com/ksqlflow/flowtest/internal/runner"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// CSVAppCheck is the §3.4 rule the app and token checks cannot see: on a live target the
// CSV fixture app (KSQL_CSV1_TARGET_APP_ID) must not be the app of any logical app of the
// kSQL-Flow profile other than the CSV fixture's own logical name — a CSV import would
// otherwise write into an app real jobs read. The profile's apps are learnt from
// describe-profile (product-contract §7); a profile that cannot be described is refused (fail
// closed). On the sandbox the runner writes the config itself: not checked.
func CSVAppCheck(target safety.Target, items []runner.Item, cfgPath, profile, csvApp string, describe profileDescriber) safety.Check {
	c := safety.Check{Name: "csv-app-not-logical", Subject: safety.VarAppCSV, OK: true, Reason: "no selected scenario needs csv-io"}
	ids := needing(items, runner.NeedCSVIO)
	switch {
	case len(ids) == 0:
		return c
	case target != safety.TargetLive:
		c.Reason = "sandbox: the runner writes the kSQL-Flow config (not checked)"
		return c
	case strings.TrimSpace(csvApp) == "" || strings.TrimSpace(cfgPath) == "":
		c.OK, c.Reason = false, fmt.Sprintf("csv-io scenarios (%s) need %s and %s to compare", strings.Join(ids, ", "), safety.VarAppCSV, config.VarFlowConfig)
		return c
	}
	d, err := describe(cfgPath, profile)
	if err != nil {
		c.OK, c.Reason = false, fmt.Sprintf("the kSQL-Flow profile cannot be described (refused rather than unchecked): %v", err)
		return c
	}
	var clash []string
	for name, id := range d.Apps {
		if name == safety.DefaultCSVLogicalApp {
			continue
		}
		if id == strings.TrimSpace(csvApp) {
			clash = append(clash, name)
		}
	}
	sort.Strings(clash)
	if len(clash) > 0 {
		c.OK, c.Reason = false, fmt.Sprintf("the CSV fixture app is the app of logical app(s) %s of profile %s", strings.Join(clash, ", "), profile)
		return c
	}
	c.Reason = fmt.Sprintf("no logical app of profile %s but %s is the CSV fixture app", profile, safety.DefaultCSVLogicalApp)
	return c
}
