package cli

import (
	"fmt"
	"path/filepath"

	"github.com/ksqlflow/flowtest/internal/app/budget"
	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// countedReader is a target's read-only client (internal/harness/target builds it uncounted) counting
// like preflight.TenantHTTP's.
func countedReader(api *kintoneapi.Client) *kintoneapi.Client {
	cp := *api
	hc := *api.HTTP
	hc.Transport = apicount.Transport(hc.Transport, nil, api.Tokens)
	cp.HTTP = &hc
	return &cp
}

// budgetChecks is the live run's API budget check (none on the sandbox, whose emulator has
// no day to exhaust): the selection's requests per app estimated from the newest archive of
// the same tag expression on a live target (or --durations-from's), refused when an app's
// estimate exceeds the budget. It sends nothing, so it runs with the static checks, before
// any probe.
func (s *session) budgetChecks() []safety.Check {
	if s.in.Target != safety.TargetLive {
		return nil
	}
	in := budget.Input{PerApp: s.cfg.APIBudget}
	for role := range s.cfg.LiveApps() {
		in.Apps = append(in.Apps, string(role))
	}
	for range max(1, s.flags.repeat) { // --repeat N runs the selection N times
		for _, it := range s.items {
			if it.Run {
				in.Selected = append(in.Selected, it.ID)
			}
		}
	}
	dir := s.flags.durationsDir
	if dir == "" && s.flags.out != "" { // check has no --out: it estimates from the default
		dir = lastArchiveOf(s.flags.out, s.flags.tags, "live", "")
	}
	c := safety.Check{Name: "api-budget", Subject: "kintone requests per app", OK: true}
	if dir != "" {
		recs, run, err := results.ReadVerified(dir)
		if err != nil {
			c.OK, c.Reason = false, fmt.Sprintf("the earlier archive %s, which gives the estimate, cannot be read: %v", dir, err)
			return []safety.Check{c}
		}
		in.Earlier = budget.FromArchive(archiveName(dir), recs, run)
	}
	v := budget.Check(in)
	s.budget = &v
	if !v.OK() {
		c.OK, c.Reason = false, v.Problem()
	}
	return []safety.Check{c}
}

// archiveName is an archive's <date>/<time>-<label> (its folder under --out).
func archiveName(dir string) string {
	return filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(dir)), filepath.Base(dir)))
}
