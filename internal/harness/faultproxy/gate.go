package faultproxy

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
)

// Gate is handed every request that the mode lets through, on arrival and before any
// barrier or fault; it is how a scheduler outside the proxy (flowtest explore) controls
// the order of a process's writes. Begin may block (hold the request) until the gate lets
// it go; an error drops the request's connection, as a failed hold does. done is called
// exactly once, after the response went back to the client (status 0 when the request
// failed instead), so a gate can wait for a released write's answer before releasing
// another. A gate that does not hold a request (a read) returns at once.
type Gate interface {
	Begin(ctx context.Context, r GateRequest) (done func(status int), err error)
}

// GateRequest is what a gate sees of a request: enough to name a write by what it does
// (never by a value that changes from run to run, like a record id, apart from RecordID
// itself, which the gate may use to relate writes but should not put in a signature).
type GateRequest struct {
	Method string // as sent
	// MethodOverride is the X-HTTP-Method-Override header: a POST carrying GET is a read.
	MethodOverride string
	Path           string
	App            string // the body's "app", else the query's
	// RecordID is the body's top-level "id" (or the query's, for a body-less request).
	RecordID string
	// Fields are the sorted field names under record or records[].record.
	Fields []string
	// RecordKey is the written record_key (record.record_key.value), else the value of an
	// updateKey on record_key; RecordType is record.record_type.value.
	RecordKey, RecordType string
	// UpdateKey is the field of the body's updateKey ("" when the write is by id).
	UpdateKey string
	// Revision is the body's "revision" as sent ("" when absent): kintone's fence.
	Revision string
	// Heartbeat: a PUT whose record has heartbeat_at.
	Heartbeat bool
	// Values are the single values (string or number) of the fields under record, for a
	// gate that judges what a write did (a run's status, a request's state). Unlike the
	// traffic log, a gate is in-process and writes nothing; it must not log these.
	Values map[string]string
}

// gateBox holds the installed gate; an atomic pointer keeps the pass path at one load
// when no gate is installed (the normal case: explore off).
type gateBox struct{ g Gate }

// SetGate installs g for requests that arrive from now on (nil removes it); requests
// already admitted keep the gate they got.
func (p *Proxy) SetGate(g Gate) {
	if g == nil {
		p.gate.Store(nil)
		return
	}
	p.gate.Store(&gateBox{g})
}

// gateOf is the installed gate or nil.
func gateOf(a *atomic.Pointer[gateBox]) Gate {
	if b := a.Load(); b != nil {
		return b.g
	}
	return nil
}

// gateRequest builds the gate's view of a request from the already buffered body.
func (v *requestView) gateRequest(app, id string, fields []string, heartbeat bool) GateRequest {
	r := GateRequest{Method: v.method, Path: v.path, App: app, RecordID: id, Fields: fields, Heartbeat: heartbeat}
	if !v.parse() {
		return r
	}
	if raw, ok := v.obj["revision"]; ok {
		r.Revision, _ = scalar(raw)
	}
	for k, raw := range v.record {
		if val := fieldValue(raw); val != "" {
			if r.Values == nil {
				r.Values = map[string]string{}
			}
			r.Values[k] = val
		}
	}
	r.RecordKey = fieldValue(v.record["record_key"])
	r.RecordType = fieldValue(v.record["record_type"])
	if raw, ok := v.obj["updateKey"]; ok {
		var uk struct {
			Field string          `json:"field"`
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal(raw, &uk) == nil {
			r.UpdateKey = uk.Field
			if s, ok := scalar(uk.Value); ok && strings.EqualFold(uk.Field, "record_key") && r.RecordKey == "" {
				r.RecordKey = s
			}
		}
	}
	if r.RecordKey == "" || r.RecordType == "" {
		// A bulk write: name it by its first record (FlowNet's bulk writes are of one kind).
		if recs := v.bulk(); len(recs) > 0 {
			if r.RecordKey == "" {
				r.RecordKey = fieldValue(recs[0].Record["record_key"])
			}
			if r.RecordType == "" {
				r.RecordType = fieldValue(recs[0].Record["record_type"])
			}
		}
	}
	return r
}

// IsWrite: anything but a GET, and but a POST that kintone runs as a GET.
func (r GateRequest) IsWrite() bool {
	return r.Method != "GET" && r.Method != "HEAD" && !(r.Method == "POST" && strings.EqualFold(r.MethodOverride, "GET"))
}

// fieldValue is the string value of a kintone field object {"value": …} ("" otherwise).
func fieldValue(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var f struct {
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return ""
	}
	s, _ := scalar(f.Value)
	return s
}
