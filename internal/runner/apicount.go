package runner

import (
	"github.com/ksqlflow/flowtest/internal/harness/apicount"
	"github.com/ksqlflow/flowtest/internal/results"
)

// OtherApp is the role under which requests on no app of the target are recorded (and
// requests that name no app): archives never hold raw app ids.
const OtherApp = "other"

// apiRequests is a counter's snapshot for the archive: keyed by role (roles: app id → role),
// never by app id.
func apiRequests(c *apicount.Counter, roles map[string]string) results.APIRequests {
	snap := c.Snapshot().Renamed(roles, OtherApp)
	if len(snap) == 0 {
		return nil
	}
	out := results.APIRequests{}
	for role, a := range snap {
		out[role] = results.AppRequests{Requests: a.Requests, ByMethod: a.ByMethod, ByOrigin: a.ByOrigin, Throttled: a.Throttled}
	}
	return out
}
