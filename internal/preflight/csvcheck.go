package preflight

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/harness/config"
	"github.com/ksqlflow/flowtest/runner"
	"github.com/ksqlflow/flowtest/safety"
)

// CSVAppCheck is the §3.4 rule the app and token checks cannot see: on a live target the
// CSV fixture app (KSQL_CSV1_TARGET_APP_ID) must not be the app of any logical app of the
// kSQL-Flow config's profile other than the CSV fixture's own logical name — a CSV import
// would otherwise write into an app real jobs read. The config is read as the sandbox
// kSQL-Flow documents it ({"profiles": {<p>: {"apps": {<name>: {"appId": …}}}}}); a config
// that cannot be read that way is refused (fail closed). On the sandbox the runner writes
// the config itself: not checked.
func CSVAppCheck(target safety.Target, items []runner.Item, cfgPath, profile, csvApp string, read func(string) ([]byte, error)) safety.Check {
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
	data, err := read(cfgPath)
	if err != nil {
		c.OK, c.Reason = false, fmt.Sprintf("read the kSQL-Flow config: %v", err)
		return c
	}
	var doc struct {
		Profiles map[string]struct {
			Apps map[string]struct {
				AppID json.RawMessage `json:"appId"`
			} `json:"apps"`
		} `json:"profiles"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		c.OK, c.Reason = false, fmt.Sprintf("the kSQL-Flow config is not the JSON this check reads (%v): refused rather than unchecked", err)
		return c
	}
	prof, ok := doc.Profiles[profile]
	if !ok {
		c.OK, c.Reason = false, fmt.Sprintf("the kSQL-Flow config has no profile %q", profile)
		return c
	}
	var clash []string
	for name, a := range prof.Apps {
		if name == safety.DefaultCSVLogicalApp {
			continue
		}
		if strings.Trim(string(a.AppID), `" `) == strings.TrimSpace(csvApp) {
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
