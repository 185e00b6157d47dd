package emulator

import (
	"strconv"
)

// Record reads: GET record.json and records.json, and the API read form of a record.

type fieldOut struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// render is the API read form of r, limited to fields when non-nil.
func (a *app) render(r *record, fields map[string]bool) map[string]fieldOut {
	out := make(map[string]fieldOut, len(a.ordered)+7)
	want := func(code string) bool { return fields == nil || fields[code] }
	id := strconv.FormatInt(r.id, 10)
	if want(codeID) {
		out[codeID] = fieldOut{"__ID__", id}
	}
	if want(codeRevision) {
		out[codeRevision] = fieldOut{"__REVISION__", strconv.FormatInt(r.rev, 10)}
	}
	if want(codeRecordNo) {
		out[codeRecordNo] = fieldOut{"RECORD_NUMBER", id}
	}
	if want(codeCreator) {
		out[codeCreator] = fieldOut{"CREATOR", adminUser}
	}
	if want(codeCreatedAt) {
		out[codeCreatedAt] = fieldOut{"CREATED_TIME", r.created}
	}
	if want(codeModifier) {
		out[codeModifier] = fieldOut{"MODIFIER", adminUser}
	}
	if want(codeModifiedAt) {
		out[codeModifiedAt] = fieldOut{"UPDATED_TIME", r.updated}
	}
	for _, f := range a.ordered {
		if want(f.Code) {
			out[f.Code] = fieldOut{f.Type, readValue(f, r.vals[f.Code])}
		}
	}
	return out
}

func fieldSet(v any) (map[string]bool, *apiError) {
	if v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errJSON()
	}
	if len(arr) == 0 {
		return nil, nil
	}
	out := map[string]bool{}
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, errJSON()
		}
		out[s] = true
	}
	return out, nil
}

func (s *Server) getRecord(c *reqCtx) (any, *apiError) {
	a, aerr := c.authApp(c.params["app"], "app", []string{permView}, nil)
	if aerr != nil {
		return nil, aerr
	}
	id, ok := paramInt(c.params["id"])
	if c.params["id"] == nil {
		return nil, errField("id", msgRequiredPar)
	}
	if !ok {
		return nil, errJSON()
	}
	if aerr := c.delay(a.latency); aerr != nil {
		return nil, aerr
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	r := a.records[id]
	if r == nil {
		return nil, errRecordNotFound(strconv.FormatInt(id, 10))
	}
	return map[string]any{"record": a.render(r, nil)}, nil
}

// searchParams authorises a record search (records.json, records/cursor.json) and reads
// its app, fields and query parameters.
func (c *reqCtx) searchParams() (*app, map[string]bool, *query, *apiError) {
	a, aerr := c.authApp(c.params["app"], "app", []string{permView}, nil)
	if aerr != nil {
		return nil, nil, nil, aerr
	}
	fields, aerr := fieldSet(c.params["fields"])
	if aerr != nil {
		return nil, nil, nil, aerr
	}
	qs := ""
	if v := c.params["query"]; v != nil {
		var ok bool
		if qs, ok = v.(string); !ok {
			return nil, nil, nil, errJSON()
		}
	}
	q, aerr := parseQuery(a, qs, c.s.now())
	if aerr != nil {
		return nil, nil, nil, aerr
	}
	return a, fields, q, nil
}

func (s *Server) getRecords(c *reqCtx) (any, *apiError) {
	a, fields, q, aerr := c.searchParams()
	if aerr != nil {
		return nil, aerr
	}
	withTotal := false
	switch v := c.params["totalCount"].(type) {
	case bool:
		withTotal = v
	case string:
		withTotal = v == "true"
	}
	if aerr := c.delay(a.latency); aerr != nil {
		return nil, aerr
	}
	a.mu.RLock()
	page, total := q.run(a)
	recs := make([]map[string]fieldOut, len(page))
	for i, r := range page {
		recs[i] = a.render(r, fields)
	}
	a.mu.RUnlock()
	var tc any
	if withTotal {
		tc = strconv.Itoa(total)
	}
	return map[string]any{"records": recs, "totalCount": tc}, nil
}
