package faultproxy

import (
	"bytes"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// requestView is what matching sees of a request.
type requestView struct {
	method   string
	override string // X-HTTP-Method-Override (kintone runs a POST as this method)
	path     string
	query    url.Values
	body     []byte // nil when not buffered (too large, multipart, GET)
	parsed   bool
	obj      map[string]json.RawMessage
	record   map[string]json.RawMessage

	bulkParsed bool
	bulkRecs   []bulkRecord // records[] of a bulk write, parsed on first use
}

// bulkRecord is one element of a bulk write's records[]: its id or updateKey (PUT) and
// record.
type bulkRecord struct {
	ID        json.RawMessage            `json:"id"`
	UpdateKey json.RawMessage            `json:"updateKey"`
	Revision  json.RawMessage            `json:"revision"`
	Record    map[string]json.RawMessage `json:"record"`
}

// isFence: a revision value that fences a write (present, not null, not kintone's -1 "no
// check").
func isFence(raw json.RawMessage) bool {
	s, ok := scalar(raw)
	return ok && s != "" && s != "null" && s != "-1"
}

// fenced says whether a PUT or DELETE carries kintone's revision fence (nil for the other
// methods, which kintone cannot fence): a single-record PUT its top-level revision; a bulk PUT
// a revision on every records[] element (one unfenced record leaves the request unfenced); a
// DELETE a revisions[] entry for each of its ids. A body that is no JSON object is unfenced.
func (v *requestView) fenced() *bool {
	if v.method != "PUT" && v.method != "DELETE" {
		return nil
	}
	f := false
	switch {
	case !v.parse():
	case v.obj["revision"] != nil:
		f = isFence(v.obj["revision"])
	case v.method == "PUT" && len(v.bulk()) > 0:
		f = true
		for _, r := range v.bulk() {
			f = f && isFence(r.Revision)
		}
	case v.method == "DELETE":
		var ids, revs []json.RawMessage
		if json.Unmarshal(v.obj["ids"], &ids) == nil && json.Unmarshal(v.obj["revisions"], &revs) == nil && len(ids) > 0 && len(revs) == len(ids) {
			f = true
			for _, r := range revs {
				f = f && isFence(r)
			}
		}
	}
	return &f
}

// keepValues is values cut to the fields of keep (nil when none is left).
func keepValues(values map[string]string, keep []string) map[string]string {
	var out map[string]string
	for _, k := range keep {
		if v, ok := values[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// updateKeyValue is the value of an updateKey object {"field", "value"} as a string ("" when
// absent or not one). kintone's PUT names the record either by "id" or by "updateKey", a
// unique field and its value; FlowNet writes its own records by updateKey on record_key.
func updateKeyValue(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var uk struct {
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal(raw, &uk) != nil {
		return ""
	}
	s, _ := scalar(uk.Value)
	return s
}

// hasRecordKey: the request addresses the record whose unique key is key, by the body's
// top-level updateKey or by one of records[].updateKey (whatever the key field; FlowNet's is
// record_key).
func (v *requestView) hasRecordKey(key string) bool {
	if !v.parse() {
		return false
	}
	if updateKeyValue(v.obj["updateKey"]) == key {
		return true
	}
	for _, r := range v.bulk() {
		if updateKeyValue(r.UpdateKey) == key {
			return true
		}
	}
	return false
}

// addresses: the request addresses the record named by id or by key (the empty ones are not
// checked; both empty is no condition). Given both, either way of naming it matches: a write
// by id and one by updateKey reach the same record.
func (v *requestView) addresses(id, key string) bool {
	switch {
	case id == "" && key == "":
		return true
	case id != "" && v.hasRecordID(id):
		return true
	case key != "" && v.hasRecordKey(key):
		return true
	}
	return false
}

// bulk is the body's records[] (nil when absent or not an array of objects).
func (v *requestView) bulk() []bulkRecord {
	if !v.bulkParsed {
		v.bulkParsed = true
		if v.parse() {
			if raw, ok := v.obj["records"]; ok {
				var recs []bulkRecord
				if json.Unmarshal(raw, &recs) == nil { // a half-parsed array is no match
					v.bulkRecs = recs
				}
			}
		}
	}
	return v.bulkRecs
}

// hasRecordID: the request addresses record id, as the body's top-level "id", one of
// records[].id, one of a delete's "ids", or the "id" query parameter of a read.
func (v *requestView) hasRecordID(id string) bool {
	if v.query.Get("id") == id {
		return true
	}
	if !v.parse() {
		return false
	}
	if s, ok := scalar(v.obj["id"]); ok && s == id {
		return true
	}
	for _, r := range v.bulk() {
		if s, ok := scalar(r.ID); ok && s == id {
			return true
		}
	}
	if raw, ok := v.obj["ids"]; ok {
		var ids []json.RawMessage
		if json.Unmarshal(raw, &ids) == nil {
			for _, r := range ids {
				if s, ok := scalar(r); ok && s == id {
					return true
				}
			}
		}
	}
	return false
}

// hasField: field is a key of the body's record, or of any records[].record.
func (v *requestView) hasField(field string) bool {
	if !v.parse() {
		return false
	}
	if _, ok := v.record[field]; ok {
		return true
	}
	for _, r := range v.bulk() {
		if _, ok := r.Record[field]; ok {
			return true
		}
	}
	return false
}

func (v *requestView) parse() bool {
	if !v.parsed {
		v.parsed = true
		trimmed := bytes.TrimSpace(v.body)
		if len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &v.obj) == nil {
			if raw, ok := v.obj["record"]; ok {
				_ = json.Unmarshal(raw, &v.record)
			}
		}
	}
	return v.obj != nil
}

// scalar renders a JSON string or number as the string the original hook compared
// (String(body.app)).
func scalar(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	return string(raw), true
}

// app is the app the request addresses: the JSON body's top-level "app", else the query's.
func (v *requestView) app() string {
	if v.parse() {
		if s, ok := scalar(v.obj["app"]); ok {
			return s
		}
	}
	return v.query.Get("app")
}

// isWrite: kintone runs the request as a write, i.e. not as a GET (a method-override POST
// runs as its override).
func (v *requestView) isWrite() bool {
	if v.method == "POST" && v.override != "" {
		return !strings.EqualFold(v.override, "GET")
	}
	return v.method != "GET"
}

// isHeartbeat: a PUT whose JSON record has heartbeat_at (the original's definition).
func (v *requestView) isHeartbeat() bool {
	// The byte check spares a JSON parse on the hot path for the many PUTs that are not
	// heartbeats (the field name appears literally in every heartbeat body).
	if v.method != "PUT" || !bytes.Contains(v.body, []byte(`"heartbeat_at"`)) || !v.parse() || v.record == nil {
		return false
	}
	_, ok := v.record["heartbeat_at"]
	return ok
}

// touched names what a request touches, for the traffic log: app and record id from the JSON
// body's top level (or, for a body-less GET/DELETE, the app and id query values), the value
// of the body's top-level updateKey (key: how a PUT by updateKey names its record, as a PUT
// by id names it by id), and the sorted field names under record, or under every
// records[].record of a bulk write. Values of fields under record never leave this function.
func (v *requestView) touched() (app, id, key string, fields []string) {
	if v.parse() {
		if raw, ok := v.obj["app"]; ok {
			app, _ = scalar(raw)
		}
		if raw, ok := v.obj["id"]; ok {
			id, _ = scalar(raw)
		}
		key = updateKeyValue(v.obj["updateKey"])
		names := map[string]bool{}
		for k := range v.record {
			names[k] = true
		}
		for _, r := range v.bulk() {
			for k := range r.Record {
				names[k] = true
			}
		}
		for k := range names {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		return app, id, key, fields
	}
	return v.query.Get("app"), v.query.Get("id"), "", nil
}
