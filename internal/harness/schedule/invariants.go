package schedule

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The operational invariants of the product contract (§8) as checks over one schedule's
// history: the scheduled writes in release order, and the scope's final records.

// Record is a final kintone record of the scope: field code → single value, with "$id".
type Record map[string]string

// History is what one schedule did.
type History struct {
	Writes                []Write
	State, Audit, Request []Record
}

// Violation is an invariant that did not hold, with what shows it.
type Violation struct {
	Invariant string `json:"invariant"`
	Detail    string `json:"detail"`
}

// Invariant is one named check.
type Invariant struct {
	Name  string
	Check func(History) []Violation
}

// Invariants are every check, in the contract's order.
var Invariants = []Invariant{
	{"one-run-per-key", OneRunPerKey},
	{"lock-intervals-disjoint", LockIntervalsDisjoint},
	{"one-claim-per-request", OneClaimPerRequest},
	{"puts-fenced", PutsFenced},
	{"no-attempt-after-close", NoAttemptAfterClose},
	{"cancelled-executed-nothing", CancelledExecutedNothing},
	{"stale-never-reexecuted", StaleNeverReexecuted},
}

// AssertionPrefix begins the `what` of the assertion by which `flowtest run` records an
// invariant it checked ("invariant puts-fenced"); the defect judge tells them by it.
const AssertionPrefix = "invariant "

// Known: name is one of the invariants.
func Known(name string) bool {
	for _, inv := range Invariants {
		if inv.Name == name {
			return true
		}
	}
	return false
}

// Names are the invariants' names, in the contract's order.
func Names() []string {
	out := make([]string, len(Invariants))
	for i, inv := range Invariants {
		out[i] = inv.Name
	}
	return out
}

// CheckAll runs every invariant.
func CheckAll(h History) []Violation {
	var out []Violation
	for _, inv := range Invariants {
		out = append(out, inv.Check(h)...)
	}
	return out
}

func (w Write) ok() bool { return w.Status >= 200 && w.Status <= 299 }

func violation(name, format string, a ...any) Violation {
	return Violation{Invariant: name, Detail: fmt.Sprintf(format, a...)}
}

// OneRunPerKey: a (network, business key) has at most one NETWORK_RUN (the scope holds one
// profile, so the key of the contract's (profile, network, business key) is this pair).
func OneRunPerKey(h History) []Violation {
	runs := map[[2]string][]string{}
	for _, r := range h.State {
		if r["record_type"] == "NETWORK_RUN" {
			k := [2]string{r["network_id"], r["business_key"]}
			runs[k] = append(runs[k], r["run_id"])
		}
	}
	var out []Violation
	// In the order of the network, then of the business key.
	for _, k := range slices.SortedFunc(maps.Keys(runs), func(a, b [2]string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]))
	}) {
		if ids := runs[k]; len(ids) > 1 {
			out = append(out, violation("one-run-per-key", "network %s, business key %s: %d runs %v", k[0], k[1], len(ids), ids))
		}
	}
	return out
}

// LockIntervalsDisjoint: a Network lock (its LOCK:<N1> key) is acquired by a successful
// POST and held until its holder's successful release (a PUT by id turning the key into a
// LOCKDONE tombstone); a second successful acquisition of one key while it is held is two
// invocations holding the lock at once.
func LockIntervalsDisjoint(h History) []Violation {
	holder := map[string]Write{} // lock key → the acquisition holding it
	var out []Violation
	for i, w := range h.Writes {
		if !w.ok() || w.Sig.Role != "state" {
			continue
		}
		switch {
		case w.Sig.Method == "POST" && w.Sig.Kind == "LOCK":
			if prev, held := holder[w.RecordKey]; held && !releasedAlongside(h.Writes[i+1:], prev, w) {
				out = append(out, violation("lock-intervals-disjoint", "%s acquired lock %s (write %d) while %s held it since write %d",
					w.Sig.Process, shortKey(w.RecordKey), w.Seq, prev.Sig.Process, prev.Seq))
			}
			holder[w.RecordKey] = w
		case w.Sig.Method == "PUT" && w.Sig.Kind == "LOCKDONE":
			// The release names the record by id, not by lock key. Where the acquisition's id
			// is known (flowtest run reads it from kintone's answer to the POST), it releases
			// that lock, whoever sends it (a force-unlock, a holder that took it over);
			// otherwise (explore's gate sees no answers) the lock of unknown id its process
			// holds (a process holds one Network lock per network at a time).
			released := false
			for k, a := range holder {
				if a.RecordID != "" && a.RecordID == w.RecordID {
					delete(holder, k)
					released = true
					break
				}
			}
			for k, a := range holder {
				if !released && a.RecordID == "" && a.Sig.Process == w.Sig.Process {
					delete(holder, k)
					break
				}
			}
		}
	}
	return out
}

// releasedAlongside reports whether the release of held's lock, by its record id, is among
// the later writes and overlapped acquisition w: sent to kintone before w was answered. The
// writes are in the order their answers reached the proxies, which for two overlapping writes
// need not be the order kintone applied them in; kintone accepts a second record with the
// lock's key only once the release has made the first a tombstone, so such a release was
// applied first (ext-06-close-resume-race showed this order once in the slow rehearsal on a
// loaded machine: the resume's POST answered before the archive's release it had waited
// for). Without the proxy's numbers (explore) or the record id, nothing is inferred.
func releasedAlongside(later []Write, held, w Write) bool {
	if held.RecordID == "" || w.Answer == 0 {
		return false
	}
	for _, r := range later {
		if r.ok() && r.Sig.Method == "PUT" && r.Sig.Kind == "LOCKDONE" && r.RecordID == held.RecordID {
			return r.Sent != 0 && r.Sent < w.Answer
		}
	}
	return false
}

// isClaim: the poller's claim of a request, the revision-fenced PUT to ACCEPTED.
func isClaim(w Write) bool {
	return w.Sig.Role == "request" && w.Sig.Method == "PUT" && w.Values["request_state"] == "ACCEPTED" && w.Values["claimed_at"] != ""
}

// OneClaimPerRequest: at most one claim PUT of a request succeeds, and a request that
// ended claimed (claimed_at set) had exactly one whenever the schedule saw a claim of it.
func OneClaimPerRequest(h History) []Violation {
	won, tried := map[string]int{}, map[string]bool{}
	for _, w := range h.Writes {
		if isClaim(w) {
			tried[w.RecordID] = true
			if w.ok() {
				won[w.RecordID]++
			}
		}
	}
	var out []Violation
	for _, r := range h.Request {
		id := r["$id"]
		switch n := won[id]; {
		case n > 1:
			out = append(out, violation("one-claim-per-request", "request %s: %d claim PUTs succeeded", id, n))
		case n == 0 && tried[id] && r["claimed_at"] != "":
			out = append(out, violation("one-claim-per-request", "request %s ended claimed but none of its claim PUTs succeeded", id))
		}
	}
	return out
}

// PutsFenced: every PUT carries kintone's revision (the contract's "all writes are
// revision-fenced"; -1 is kintone's "no check").
func PutsFenced(h History) []Violation {
	var out []Violation
	for _, w := range h.Writes {
		if w.Sig.Method == "PUT" && (w.Revision == "" || w.Revision == "-1") {
			out = append(out, violation("puts-fenced", "write %d (%s) carries no revision", w.Seq, w.Sig))
		}
	}
	return out
}

// NoAttemptAfterClose: once a Run is ARCHIVED, or CANCELLED while a hold was on it, no
// Attempt of it is created. The Run's PUT names the Run by $id or (the real FlowNet) by
// updateKey on its record_key; either finds it.
func NoAttemptAfterClose(h History) []Violation {
	runOfID, runOfKey, held := map[string]string{}, map[string]string{}, map[string]bool{}
	for _, r := range h.State {
		switch r["record_type"] {
		case "NETWORK_RUN":
			runOfID[r["$id"]] = r["run_id"]
			if k := r["record_key"]; k != "" {
				runOfKey[k] = r["run_id"]
			}
		case "CANCEL_REQUEST":
			held[r["run_id"]] = true
		}
	}
	closed := map[string]int{} // run → the write that closed it
	var out []Violation
	for _, w := range h.Writes {
		if !w.ok() {
			continue
		}
		if w.Sig.Role == "state" && w.Sig.Method == "PUT" {
			run := w.Values["run_id"]
			if run == "" && w.RecordID != "" {
				run = runOfID[w.RecordID]
			}
			if run == "" && w.RecordKey != "" {
				run = runOfKey[w.RecordKey]
			}
			if run != "" && (w.Values["lifecycle_status"] == "ARCHIVED" || (w.Values["status"] == "CANCELLED" && held[run] && w.Values["record_type"] != "NODE_STATE")) {
				if _, done := closed[run]; !done {
					closed[run] = w.Seq
				}
			}
		}
		if w.Sig.Role == "audit" && w.Sig.Method == "POST" && w.Sig.Kind == "ATT" {
			if at, done := closed[w.Values["run_id"]]; done {
				out = append(out, violation("no-attempt-after-close", "run %s: attempt created (write %d) after the run was closed (write %d)", w.Values["run_id"], w.Seq, at))
			}
		}
	}
	return out
}

// CancelledExecutedNothing: a request that ended CANCELLED was never claimed.
func CancelledExecutedNothing(h History) []Violation {
	claimed := map[string]bool{}
	for _, w := range h.Writes {
		if isClaim(w) && w.ok() {
			claimed[w.RecordID] = true
		}
	}
	var out []Violation
	for _, r := range h.Request {
		if r["request_state"] != "CANCELLED" {
			continue
		}
		if claimed[r["$id"]] || r["claimed_at"] != "" {
			out = append(out, violation("cancelled-executed-nothing", "request %s ended CANCELLED but was claimed", r["$id"]))
		}
	}
	return out
}

// StaleNeverReexecuted: after a request was settled STALE, it is not claimed again and its
// run gets no new invocation.
func StaleNeverReexecuted(h History) []Violation {
	staleAt := map[string]int{} // request id → the write that settled it STALE
	runOf := map[string]string{}
	for _, r := range h.Request {
		runOf[r["$id"]] = r["run_id"]
	}
	var out []Violation
	for _, w := range h.Writes {
		if !w.ok() {
			continue
		}
		if w.Sig.Role == "request" && w.Sig.Method == "PUT" {
			if at, stale := staleAt[w.RecordID]; stale && isClaim(w) {
				out = append(out, violation("stale-never-reexecuted", "request %s claimed again (write %d) after it was settled STALE (write %d)", w.RecordID, w.Seq, at))
			}
			if w.Values["result_code"] == "STALE" {
				staleAt[w.RecordID] = w.Seq
			}
		}
		if w.Sig.Role == "audit" && w.Sig.Method == "POST" && w.Sig.Kind == "INV" {
			for id, at := range staleAt {
				if run := runOf[id]; run != "" && run == w.Values["run_id"] {
					out = append(out, violation("stale-never-reexecuted", "request %s: run %s invoked again (write %d) after the request was settled STALE (write %d)", id, run, w.Seq, at))
				}
			}
		}
	}
	return out
}

// shortKey is a record key cut to 16 bytes and an ellipsis, for a violation's message.
func shortKey(key string) string {
	if len(key) > 16 {
		return key[:16] + "…"
	}
	return key
}
