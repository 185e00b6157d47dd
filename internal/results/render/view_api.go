package render

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// apiRow is one app's line of the "API requests" section.
type apiRow struct {
	app, requests, methods, origins, throttled, estimate string
}

// apiSection is the "API requests" section: per app what the run sent (run.json's counts),
// with the estimate and budget a live run was checked against, and the scenarios that sent
// the most. Empty rows: the run recorded no counts.
type apiSection struct {
	rows    []apiRow
	budget  string // "" when no budget was checked (sandbox runs)
	heavies string // the (at most 3) scenarios with the most requests
}

// originOrder lists the senders as a run meets them: the harness, then FlowNet, then the
// kSQL-Flow FlowNet starts; an origin an older flowtest did not know comes after them.
var originOrder = []string{"harness", "flownet", "ksql-flow"}

// originsText is "harness 12, flownet 30, ksql-flow 4", or "-" for counts without the split
// (archives of a flowtest before it).
func originsText(byOrigin map[string]int64) string {
	if len(byOrigin) == 0 {
		return "-"
	}
	names := slices.SortedFunc(maps.Keys(byOrigin), func(a, b string) int {
		ia, ib := slices.Index(originOrder, a), slices.Index(originOrder, b)
		if ia < 0 {
			ia = len(originOrder)
		}
		if ib < 0 {
			ib = len(originOrder)
		}
		return cmp.Or(cmp.Compare(ia, ib), cmp.Compare(a, b))
	})
	parts := make([]string, len(names))
	for i, o := range names {
		parts[i] = fmt.Sprintf("%s %d", o, byOrigin[o])
	}
	return strings.Join(parts, ", ")
}

func (v *View) apiRequests() apiSection {
	var out apiSection
	run := v.run
	for _, app := range slices.Sorted(maps.Keys(run.APIRequests)) {
		c := run.APIRequests[app]
		var ms []string
		for _, m := range slices.Sorted(maps.Keys(c.ByMethod)) {
			ms = append(ms, fmt.Sprintf("%s %d", m, c.ByMethod[m]))
		}
		r := apiRow{app: app, requests: fmt.Sprint(c.Requests), methods: strings.Join(ms, ", "), origins: originsText(c.ByOrigin), throttled: fmt.Sprint(c.Throttled), estimate: "-"}
		if run.APIBudget != nil {
			if n, ok := run.APIBudget.Estimate[app]; ok {
				r.estimate = fmt.Sprint(n)
			}
		}
		out.rows = append(out.rows, r)
	}
	if b := run.APIBudget; b != nil {
		out.budget = fmt.Sprintf("Budget: %d requests per app, checked before the run against the estimate from %s.", b.PerApp, b.Basis)
	}
	type heavy struct {
		id string
		n  int64
	}
	var hs []heavy
	for _, s := range v.scen {
		if n := s.APIRequests.Total(); n > 0 {
			hs = append(hs, heavy{s.ID, n})
		}
	}
	slices.SortStableFunc(hs, func(a, b heavy) int { return cmp.Compare(b.n, a.n) })
	var names []string
	for _, h := range hs[:min(3, len(hs))] {
		names = append(names, fmt.Sprintf("%s (%d)", h.id, h.n))
	}
	if len(names) > 0 {
		out.heavies = "Most requests: " + strings.Join(names, ", ") + "."
	}
	return out
}
