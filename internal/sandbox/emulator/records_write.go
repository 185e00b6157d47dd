package emulator

import (
	"fmt"
	"strconv"
	"strings"
)

// Record writes: POST/PUT record(s).json and DELETE records.json, each one transaction
// (also run as bulkRequest sub-requests).

// txOp is one write API applied inside a transaction (also a bulkRequest sub-request).
type txOp func(t *tx, a *app, p map[string]any) (any, *apiError)

// writeAPI is a record write endpoint: the token permission it needs and its operation.
type writeAPI struct {
	perm string
	op   txOp
}

// writeAPIs are the record writes by "METHOD api"; both the router and bulkRequest (which
// accepts exactly these sub-requests) dispatch through this table.
var writeAPIs = map[string]writeAPI{
	"POST record.json":    {permAdd, opAddRecord},
	"PUT record.json":     {permEdit, opUpdateRecord},
	"POST records.json":   {permAdd, opAddRecords},
	"PUT records.json":    {permEdit, opUpdateRecords},
	"DELETE records.json": {permDelete, opDeleteRecords},
}

// perms are the permissions a request with payload p needs: UPSERT also needs add.
func (w writeAPI) perms(p map[string]any) []string {
	if w.perm == permEdit && p["upsert"] == true {
		return []string{permEdit, permAdd}
	}
	return []string{w.perm}
}

// handler authorises, applies the latency, then runs the operation in its own transaction.
func (w writeAPI) handler(s *Server) handlerFunc {
	return func(c *reqCtx) (any, *apiError) {
		a, aerr := c.authApp(c.params["app"], "app", w.perms(c.params), nil)
		if aerr != nil {
			return nil, aerr
		}
		if aerr := c.delay(a.latency); aerr != nil {
			return nil, aerr
		}
		t := s.begin(c.arrival, a)
		out, aerr := w.op(t, a, c.params)
		if aerr != nil {
			t.rollback()
			return nil, aerr
		}
		t.commit()
		return out, nil
	}
}

func recordParam(v any) (fieldInput, *apiError) {
	if v == nil {
		return fieldInput{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errJSON()
	}
	return fieldInput(m), nil
}

// recordsParam reads the records array of a bulk add/update (verb "added"/"updated" for
// kintone's message): required, an array, at most 100 items.
func recordsParam(p map[string]any, verb string) ([]any, *apiError) {
	arr, ok := p["records"].([]any)
	if p["records"] == nil {
		return nil, errField("records", msgRequiredPar)
	}
	if !ok {
		return nil, errJSON()
	}
	if len(arr) > 100 {
		return nil, errField("records", "A maximum of 100 records can be "+verb+" at one time.")
	}
	return arr, nil
}

func revisionParam(v any) (int64, *apiError) {
	if v == nil {
		return -1, nil
	}
	n, ok := paramInt(v)
	if !ok {
		return 0, errJSON()
	}
	if n < -1 {
		return 0, errField("revision", "must be greater than or equal to -1")
	}
	return n, nil
}

func opAddRecord(t *tx, a *app, p map[string]any) (any, *apiError) {
	in, aerr := recordParam(p["record"])
	if aerr != nil {
		return nil, aerr
	}
	r, aerr := t.add(a, in, "record")
	if aerr != nil {
		return nil, aerr
	}
	return map[string]string{"id": strconv.FormatInt(r.id, 10), "revision": "1"}, nil
}

func opAddRecords(t *tx, a *app, p map[string]any) (any, *apiError) {
	arr, aerr := recordsParam(p, "added")
	if aerr != nil {
		return nil, aerr
	}
	ids, revs := make([]string, 0, len(arr)), make([]string, 0, len(arr))
	for i, e := range arr {
		in, aerr := recordParam(e)
		if aerr != nil {
			return nil, aerr
		}
		r, aerr := t.add(a, in, fmt.Sprintf("records[%d]", i))
		if aerr != nil {
			return nil, aerr
		}
		ids = append(ids, strconv.FormatInt(r.id, 10))
		revs = append(revs, "1")
	}
	return map[string][]string{"ids": ids, "revisions": revs}, nil
}

// updateItem applies one update (PUT record.json body, or one item of PUT records.json).
// It returns the record and "UPDATE" or "INSERT" (upsert).
func updateItem(t *tx, a *app, item map[string]any, prefix string, upsert bool) (*record, string, *apiError) {
	_, hasID := item["id"]
	uk, hasKey := item["updateKey"]
	if item["id"] == nil {
		hasID = false
	}
	if uk == nil {
		hasKey = false
	}
	if hasID == hasKey {
		msg := "The record to be updated must be specified by one of the parameters \"id\" and \"updateKey\"."
		p := ""
		if prefix != "" {
			p = prefix + "."
		}
		return nil, "", errValidation(map[string][]string{p + "id": {msg}, p + "updateKey": {msg}})
	}
	in, aerr := recordParam(item["record"])
	if aerr != nil {
		return nil, "", aerr
	}
	rev, aerr := revisionParam(item["revision"])
	if aerr != nil {
		return nil, "", aerr
	}
	recPrefix := "record"
	if prefix != "" {
		recPrefix = prefix
	}
	var tg target
	if hasID {
		id, ok := paramInt(item["id"])
		if !ok {
			return nil, "", errJSON()
		}
		tg = target{id: id, hasID: true}
	} else {
		m, ok := uk.(map[string]any)
		if !ok {
			return nil, "", errJSON()
		}
		field, _ := m["field"].(string)
		tg = target{keyField: field, keyValue: m["value"], hasKey: true}
		// The key field inside record may only repeat the key (we accept that no-op; a
		// different value would silently re-key the record, which we refuse).
		if v, present, _ := in.value(field); present {
			if f := a.fields[field]; f != nil {
				inRecord, e1 := normalizeValue(f, v, recPrefix+"."+field)
				inKey, e2 := normalizeValue(f, m["value"], "updateKey")
				if e1 != nil || e2 != nil || inRecord != inKey {
					return nil, "", errField(recPrefix+"."+field+".value", "The field specified in \"updateKey\" cannot be updated.")
				}
			}
		}
	}
	r, aerr := t.find(a, tg)
	if aerr != nil {
		if upsert && (aerr.code == "GAIA_RE01" || aerr.code == "GAIA_RE20") {
			ins := fieldInput{}
			for k, v := range in {
				ins[k] = v
			}
			if tg.hasKey {
				ins[tg.keyField] = map[string]any{"value": tg.keyValue}
			}
			nr, aerr := t.add(a, ins, recPrefix)
			if aerr != nil {
				return nil, "", aerr
			}
			return nr, "INSERT", nil
		}
		return nil, "", aerr
	}
	nr, aerr := t.update(a, r, in, rev, recPrefix)
	if aerr != nil {
		return nil, "", aerr
	}
	return nr, "UPDATE", nil
}

func opUpdateRecord(t *tx, a *app, p map[string]any) (any, *apiError) {
	r, _, aerr := updateItem(t, a, p, "", false)
	if aerr != nil {
		return nil, aerr
	}
	return map[string]string{"revision": strconv.FormatInt(r.rev, 10)}, nil
}

func opUpdateRecords(t *tx, a *app, p map[string]any) (any, *apiError) {
	arr, aerr := recordsParam(p, "updated")
	if aerr != nil {
		return nil, aerr
	}
	upsert := p["upsert"] == true
	out := make([]map[string]string, 0, len(arr))
	for i, e := range arr {
		item, ok := e.(map[string]any)
		if !ok {
			return nil, errJSON()
		}
		r, op, aerr := updateItem(t, a, item, fmt.Sprintf("records[%d]", i), upsert)
		if aerr != nil {
			return nil, aerr
		}
		res := map[string]string{"id": strconv.FormatInt(r.id, 10), "revision": strconv.FormatInt(r.rev, 10)}
		if upsert {
			res["operation"] = op
		}
		out = append(out, res)
	}
	return map[string]any{"records": out}, nil
}

func opDeleteRecords(t *tx, a *app, p map[string]any) (any, *apiError) {
	ids, _ := p["ids"].([]any)
	if len(ids) == 0 || len(ids) > 100 {
		return nil, errValidation(map[string][]string{"ids": {"Between 1 and 100 records can be deleted at one time.", msgRequiredPar}})
	}
	var revs []any
	if p["revisions"] != nil {
		var ok bool
		if revs, ok = p["revisions"].([]any); !ok {
			return nil, errJSON()
		}
		if len(revs) != len(ids) {
			return nil, errField("revisions", "The number of revisions must match the number of ids.")
		}
	}
	for i, v := range ids {
		id, ok := paramInt(v)
		if !ok {
			return nil, errJSON()
		}
		r := a.records[id]
		if r == nil {
			return nil, errRecordNotFound(strconv.FormatInt(id, 10))
		}
		if revs != nil {
			rev := int64(-1) // a blank revision is unchecked, like -1
			if s, isStr := revs[i].(string); !isStr || strings.TrimSpace(s) != "" {
				var aerr *apiError
				if rev, aerr = revisionParam(revs[i]); aerr != nil {
					return nil, aerr
				}
			}
			if rev >= 0 && rev != r.rev {
				return nil, errRevision()
			}
		}
		t.delete(a, id)
	}
	return map[string]any{}, nil
}
