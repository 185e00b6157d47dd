// Package explore is flowtest's controlled scheduler for race scenarios: over the fault
// proxies of a scenario's FlowNet processes (faultproxy.Gate) it holds every write to the
// state, audit and request apps on arrival, waits until the scenario is quiescent, and
// releases exactly one held write, chosen by a strategy (random, PCT, bounded DFS or a
// replay), waiting for its answer before choosing the next. The sequence of released
// writes, each named by a stable Signature, is the schedule; it replays by signature.
// The invariant checkers of the product contract (§8) run over what a schedule wrote.
package schedule

import (
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
)

// Signature names a write by what it does, never by a record id, a time or a scope-derived
// key, so the same write of another run of the scenario has the same signature.
type Signature struct {
	Process string   `json:"process"`
	Method  string   `json:"method"`
	Role    string   `json:"role"`           // the app's role: state, audit, request
	Kind    string   `json:"kind,omitempty"` // record_key prefix (LOCK, INV, …) or record_type
	By      string   `json:"by,omitempty"`   // "key" for an updateKey write, "id" for one by id
	Fields  []string `json:"fields,omitempty"`
}

// String is the signature's one-line form, also its identity.
func (s Signature) String() string {
	var b strings.Builder
	b.WriteString(s.Process)
	b.WriteString(" ")
	b.WriteString(s.Method)
	b.WriteString(" ")
	b.WriteString(s.Role)
	if s.Kind != "" {
		b.WriteString(" ")
		b.WriteString(s.Kind)
	}
	if s.By != "" {
		b.WriteString(" by-")
		b.WriteString(s.By)
	}
	if len(s.Fields) > 0 {
		b.WriteString(" [")
		b.WriteString(strings.Join(s.Fields, ","))
		b.WriteString("]")
	}
	return b.String()
}

// kindOf is a record_key's prefix before the first colon ("LOCK" of "LOCK:<N1>"); a key
// without one is a NETWORK_RUN's R1 key in older form or unknown, named by record_type.
func kindOf(r faultproxy.GateRequest) string {
	if i := strings.IndexByte(r.RecordKey, ':'); i > 0 {
		return r.RecordKey[:i]
	}
	return r.RecordType
}

// signatureOf names request r of process in the app role.
func signatureOf(process, role string, r faultproxy.GateRequest) Signature {
	s := Signature{Process: process, Method: r.Method, Role: role, Kind: kindOf(r), Fields: r.Fields}
	if r.Method == "PUT" {
		s.By = "id"
		if r.UpdateKey != "" {
			s.By = "key"
		}
	}
	return s
}

// Order is the signatures of a schedule's released writes as one comparable key.
func Order(sigs []Signature) string {
	parts := make([]string, len(sigs))
	for i, s := range sigs {
		parts[i] = s.String()
	}
	return strings.Join(parts, "\n")
}

// BranchNote is the scenario note a step with alternatives writes to say which one held
// (e.g. "DONE/OK + REJECTED/LOCK_CONFLICT"); the explorer counts schedules per branch.
const BranchNote = "outcome branch"
