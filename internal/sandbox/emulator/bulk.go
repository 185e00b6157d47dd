package emulator

import (
	"fmt"
	"strings"
	"time"
)

// bulkRequest runs up to 20 record/records write sub-requests in order, all-or-nothing: the
// apps involved are locked together and every write is undone if one sub-request fails.
// Failure response (status of the failing sub-request; kintone does not document it):
// {"results":[{}, {<error>}, {}]} with the error at the failing index.
func (s *Server) bulkRequest(c *reqCtx) (any, *apiError) {
	if _, aerr := c.resolveTokens(); aerr != nil {
		return nil, aerr
	}
	raw, ok := c.params["requests"].([]any)
	if c.params["requests"] == nil {
		return nil, errField("requests", msgRequiredPar)
	}
	if !ok {
		return nil, errJSON()
	}
	if len(raw) == 0 || len(raw) > 20 {
		return nil, errField("requests", "Between 1 and 20 requests can be sent at one time.")
	}
	type sub struct {
		op txOp
		a  *app
		p  map[string]any
	}
	subs := make([]sub, len(raw))
	fail := func(i int, e *apiError) (any, *apiError) {
		return nil, &apiError{status: e.status, code: e.code, message: e.message, bulkIndex: i, bulkErr: e, bulkLen: len(raw)}
	}
	for i, e := range raw {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, errJSON()
		}
		method, _ := m["method"].(string)
		api, _ := m["api"].(string)
		p, ok := m["payload"].(map[string]any)
		if !ok {
			return fail(i, errField(fmt.Sprintf("requests[%d].payload", i), msgRequiredPar))
		}
		// The api is the full path ("/k/v1/record.json"), as kintone's docs and clients send it.
		api, full := strings.CutPrefix(api, "/k/v1/")
		w, ok := writeAPIs[strings.ToUpper(method)+" "+api]
		if !ok || !full {
			return fail(i, errField(fmt.Sprintf("requests[%d].api", i), "The API cannot be used in a bulk request."))
		}
		a, aerr := c.authApp(p["app"], "app", w.perms(p), nil)
		if aerr != nil {
			return fail(i, aerr)
		}
		subs[i] = sub{op: w.op, a: a, p: p}
	}
	var apps []*app
	var latency time.Duration
	for _, sb := range subs {
		apps = append(apps, sb.a)
		latency = max(latency, sb.a.latency)
	}
	if aerr := c.delay(latency); aerr != nil {
		return nil, aerr
	}
	t := s.begin(c.arrival, apps...)
	results := make([]any, 0, len(subs))
	for i, sb := range subs {
		out, aerr := sb.op(t, sb.a, sb.p)
		if aerr != nil {
			t.rollback()
			return fail(i, aerr)
		}
		results = append(results, out)
	}
	t.commit()
	return map[string]any{"results": results}, nil
}

// bulkBody is the failure body of a bulk request.
func (e *apiError) bulkBody() map[string]any {
	res := make([]any, e.bulkLen)
	for i := range res {
		res[i] = map[string]any{}
	}
	res[e.bulkIndex] = e.bulkErr.body()
	return map[string]any{"results": res}
}
