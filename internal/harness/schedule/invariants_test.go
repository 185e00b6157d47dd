package schedule

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// w builds a recorded write: process, method, role, kind; the options fill the rest.
func w(seq int, process, method, role, kind string, status int, opts ...func(*Write)) Write {
	wr := Write{Seq: seq, Sig: Signature{Process: process, Method: method, Role: role, Kind: kind}, Status: status, Revision: "3"}
	for _, o := range opts {
		o(&wr)
	}
	return wr
}

func id(i string) func(*Write)  { return func(w *Write) { w.RecordID = i } }
func key(k string) func(*Write) { return func(w *Write) { w.RecordKey = k } }
func vals(kv ...string) func(*Write) {
	return func(w *Write) {
		w.Values = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			w.Values[kv[i]] = kv[i+1]
		}
	}
}

func claim(seq int, process, req string, status int) Write {
	return w(seq, process, "PUT", "request", "", status, id(req), vals("request_state", "ACCEPTED", "claimed_at", "2025-01-01T00:00:00Z"))
}

// names are the invariants a check reported.
func names(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Invariant)
	}
	return out
}

// The history of p2-11-03's concurrent STARTs as it should go: poller A claims "first",
// takes the lock and makes the run; poller B claims "second", finds the run and settles.
func goodDuplicatesHistory() History {
	return History{
		Writes: []Write{
			claim(0, "poller A", "11", 200),
			claim(1, "poller B", "12", 200),
			w(2, "poller A", "POST", "state", "LOCK", 200, key("LOCK:n1")),
			w(3, "poller B", "POST", "state", "LOCK", 400, key("LOCK:n1")),
			w(4, "poller A", "POST", "state", "R1", 200, vals("run_id", "netrun_1")),
			w(5, "poller A", "POST", "audit", "INV", 200, vals("run_id", "netrun_1")),
			w(6, "poller A", "POST", "audit", "ATT", 200, vals("run_id", "netrun_1")),
			w(7, "poller A", "PUT", "state", "LOCKDONE", 200, id("40")),
			w(8, "poller A", "PUT", "request", "", 200, id("11"), vals("request_state", "DONE", "result_code", "SUCCESS")),
			w(9, "poller B", "PUT", "request", "", 200, id("12"), vals("request_state", "REJECTED", "result_code", "LOCK_CONFLICT")),
		},
		State: []Record{{"$id": "30", "record_type": "NETWORK_RUN", "network_id": "n", "business_key": "k", "run_id": "netrun_1"}},
		Request: []Record{{"$id": "11", "request_state": "DONE", "claimed_at": "x"},
			{"$id": "12", "request_state": "REJECTED", "claimed_at": "x"}},
	}
}

func TestAGoodHistoryViolatesNothing(t *testing.T) {
	assert.Empty(t, CheckAll(goodDuplicatesHistory()))
}

func TestOneRunPerKey(t *testing.T) {
	h := goodDuplicatesHistory()
	h.State = append(h.State, Record{"record_type": "NETWORK_RUN", "network_id": "n", "business_key": "k", "run_id": "netrun_2"},
		Record{"record_type": "NETWORK_RUN", "network_id": "n", "business_key": "other", "run_id": "netrun_3"})
	vs := OneRunPerKey(h)
	require.Len(t, vs, 1)
	assert.Contains(t, vs[0].Detail, "business key k: 2 runs")
}

func TestLockIntervalsDisjoint(t *testing.T) {
	h := goodDuplicatesHistory()
	// B acquires after A released: fine.
	h.Writes = append(h.Writes, w(10, "poller B", "POST", "state", "LOCK", 200, key("LOCK:n1")))
	assert.Empty(t, LockIntervalsDisjoint(h))
	// B acquires while A holds it: two invocations hold one lock.
	h.Writes = h.Writes[:10]
	h.Writes[3].Status = 200
	vs := LockIntervalsDisjoint(h)
	require.Len(t, vs, 1)
	assert.Contains(t, vs[0].Detail, "poller B acquired lock")
	assert.Contains(t, vs[0].Detail, "poller A held it since write 2")
}

// Where the acquisition's record id is known (flowtest run reads it from kintone's answer),
// a release by that id frees the lock whoever sends it: a force-unlock by another process, or
// a holder that took the lock over; a release of another lock's id frees none.
func TestLockReleasedByTheAcquiredRecordsID(t *testing.T) {
	h := History{Writes: []Write{
		w(0, "run 1", "POST", "state", "LOCK", 200, key("LOCK:n1"), id("40")),
		w(1, "force-unlock", "PUT", "state", "LOCKDONE", 200, id("40")),
		w(2, "run 2", "POST", "state", "LOCK", 200, key("LOCK:n1"), id("41")),
	}}
	assert.Empty(t, LockIntervalsDisjoint(h), "the force-unlock released run 1's lock by its id")
	h.Writes[1] = w(1, "run 1", "PUT", "state", "LOCKDONE", 200, id("39"))
	vs := LockIntervalsDisjoint(h)
	require.Len(t, vs, 1, "run 1 released another record than the lock it holds")
	assert.Contains(t, vs[0].Detail, "run 2 acquired lock LOCK:n1 (write 2) while run 1 held it since write 0")
}

// Writes are in the order of their answers; a release that overlapped the next acquisition
// (forwarded before that POST was answered) was applied first, even where its own answer
// reached its proxy later. One forwarded after the POST's answer was not: two holders.
func TestLockReleaseOverlappingTheNextAcquisition(t *testing.T) {
	acquire := w(0, "archive", "POST", "state", "LOCK", 200, key("LOCK:n1"), id("5"))
	next := w(1, "resumed run", "POST", "state", "LOCK", 200, key("LOCK:n1"), id("6"))
	release := w(2, "archive", "PUT", "state", "LOCKDONE", 200, id("5"))
	acquire.Sent, acquire.Answer = 1, 2
	next.Sent, next.Answer = 4, 6
	release.Sent, release.Answer = 5, 7
	h := History{Writes: []Write{acquire, next, release}}
	assert.Empty(t, LockIntervalsDisjoint(h), "the release was forwarded (5) before the POST was answered (6)")

	h.Writes[2].Sent = 6
	vs := LockIntervalsDisjoint(h)
	require.Len(t, vs, 1, "forwarded only after the POST's answer: the lock was held twice")
	assert.Contains(t, vs[0].Detail, "resumed run acquired lock LOCK:n1 (write 1) while archive held it since write 0")

	h.Writes[2].Sent, h.Writes[2].Status = 5, 409
	assert.Len(t, LockIntervalsDisjoint(h), 1, "a release kintone refused released nothing")
	h.Writes[2].Status, h.Writes[1].Answer = 200, 0
	assert.Len(t, LockIntervalsDisjoint(h), 1, "without the proxy's numbers (explore) nothing is inferred")
}

func TestOneClaimPerRequest(t *testing.T) {
	h := goodDuplicatesHistory()
	h.Writes = append(h.Writes, claim(10, "poller B", "11", 200))
	assert.Equal(t, []string{"one-claim-per-request"}, names(OneClaimPerRequest(h)), "two claims of one request succeeded")

	h = goodDuplicatesHistory()
	h.Writes[1].Status = 409 // B's claim lost the race but the request ended claimed
	vs := OneClaimPerRequest(h)
	require.Len(t, vs, 1)
	assert.Contains(t, vs[0].Detail, "none of its claim PUTs succeeded")
}

func TestPutsFenced(t *testing.T) {
	h := goodDuplicatesHistory()
	assert.Empty(t, PutsFenced(h))
	h.Writes[7].Revision = ""
	h.Writes[8].Revision = "-1"
	assert.Len(t, PutsFenced(h), 2)
	h.Writes[2].Revision = "" // a POST needs none
	assert.Len(t, PutsFenced(h), 2)
}

func TestNoAttemptAfterClose(t *testing.T) {
	h := goodDuplicatesHistory()
	archive := w(10, "archive", "PUT", "state", "", 200, id("30"), vals("lifecycle_status", "ARCHIVED"))
	late := w(11, "poller A", "POST", "audit", "ATT", 200, vals("run_id", "netrun_1"))
	h.Writes = append(h.Writes, archive)
	assert.Empty(t, NoAttemptAfterClose(h), "attempts before the archive are fine")
	h.Writes = append(h.Writes, late)
	assert.Equal(t, []string{"no-attempt-after-close"}, names(NoAttemptAfterClose(h)))

	// CANCELLED counts as closed only with a hold on the run.
	h = goodDuplicatesHistory()
	h.Writes = append(h.Writes, w(10, "poller A", "PUT", "state", "", 200, id("30"), vals("status", "CANCELLED")), late)
	assert.Empty(t, NoAttemptAfterClose(h))
	h.State = append(h.State, Record{"record_type": "CANCEL_REQUEST", "run_id": "netrun_1"})
	assert.Equal(t, []string{"no-attempt-after-close"}, names(NoAttemptAfterClose(h)))
}

func TestCancelledExecutedNothing(t *testing.T) {
	h := goodDuplicatesHistory()
	h.Request = append(h.Request, Record{"$id": "13", "request_state": "CANCELLED"})
	assert.Empty(t, CancelledExecutedNothing(h))
	h.Writes = append(h.Writes, claim(10, "poller B", "13", 200))
	assert.Equal(t, []string{"cancelled-executed-nothing"}, names(CancelledExecutedNothing(h)))
}

func TestStaleNeverReexecuted(t *testing.T) {
	h := History{
		Writes: []Write{
			claim(0, "poller A", "21", 200),
			w(1, "poller B", "PUT", "request", "", 200, id("21"), vals("request_state", "REJECTED", "result_code", "STALE")),
		},
		Request: []Record{{"$id": "21", "run_id": "netrun_9", "request_state": "REJECTED", "claimed_at": "x"}},
	}
	assert.Empty(t, StaleNeverReexecuted(h))
	h.Writes = append(h.Writes, w(2, "poller C", "POST", "audit", "INV", 200, vals("run_id", "netrun_9")))
	assert.Equal(t, []string{"stale-never-reexecuted"}, names(StaleNeverReexecuted(h)), "its run invoked again")
	h.Writes = append(h.Writes[:2], claim(2, "poller C", "21", 200))
	assert.Equal(t, []string{"stale-never-reexecuted"}, names(StaleNeverReexecuted(h)), "claimed again")
}

// ext-06 under the planted defect resume-checks-archived-before-lock, as schedule 1 of
// `flowtest explore ext-06-close-resume-race --seed 1` recorded it: the CLOSE's whole locked
// section, then the resume, which had read the Run before the lock, runs an attempt. The
// ARCHIVED PUT names the Run by $id only (no run_id in its body): the final NETWORK_RUN
// record ties the two. The same writes with the resume's section first are the correct
// order "the resume ran, then ARCHIVED", which leaves the same records: only the order tells.
func TestNoAttemptAfterCloseOfACloseResumeRace(t *testing.T) {
	run := Record{"$id": "7", "record_type": "NETWORK_RUN", "network_id": "p216_longfail", "business_key": "k", "run_id": "netrun_1",
		"status": "FAILED", "lifecycle_status": "ARCHIVED"}
	closeSection := []Write{
		w(0, "archive", "POST", "state", "LOCK", 200, key("LOCK:n1")),
		w(0, "archive", "PUT", "state", "", 200, id("7")), // values set below
		w(0, "archive", "POST", "audit", "OP", 200, vals("run_id", "netrun_1", "result_code", "RUN_ARCHIVED", "record_type", "OPERATION_AUDIT")),
		w(0, "archive", "PUT", "state", "LOCKDONE", 200, id("40")),
	}
	closeSection[1].Values = map[string]string{"lifecycle_status": "ARCHIVED"}
	resumeSection := []Write{
		w(0, "resumed run", "POST", "state", "LOCK", 200, key("LOCK:n1")),
		w(0, "resumed run", "POST", "audit", "INV", 200, vals("run_id", "netrun_1", "status", "RUNNING", "record_type", "RUN_INVOCATION")),
		w(0, "resumed run", "PUT", "state", "", 200, id("7"), vals("status", "RUNNING")),
		w(0, "resumed run", "POST", "audit", "ATT", 200, vals("run_id", "netrun_1", "status", "RUNNING", "record_type", "NODE_ATTEMPT")),
		w(0, "resumed run", "PUT", "audit", "", 200, id("90"), vals("status", "FAILED")),
		w(0, "resumed run", "PUT", "state", "", 200, id("7"), vals("status", "FAILED")),
		w(0, "resumed run", "PUT", "state", "LOCKDONE", 200, id("41")),
	}
	history := func(sections ...[]Write) History {
		var ws []Write
		for _, s := range sections {
			for _, wr := range s {
				wr.Seq = len(ws)
				ws = append(ws, wr)
			}
		}
		return History{Writes: ws, State: []Record{run}}
	}
	bad := NoAttemptAfterClose(history(closeSection, resumeSection))
	require.Equal(t, []string{"no-attempt-after-close"}, names(bad))
	assert.Equal(t, "run netrun_1: attempt created (write 7) after the run was closed (write 1)", bad[0].Detail)
	assert.Empty(t, NoAttemptAfterClose(history(resumeSection, closeSection)), "the resume's attempt came before the ARCHIVED write")
	assert.Empty(t, CheckAll(history(resumeSection, closeSection)), "the correct order breaks no invariant")

	// The real FlowNet names the Run by updateKey on its record_key, with no $id: the final
	// record's record_key ties the ARCHIVED PUT to the Run the same way.
	run["record_key"] = "R1:run7"
	byKey := append([]Write(nil), closeSection...)
	byKey[1] = w(0, "archive", "PUT", "state", "R1", 200, key("R1:run7"), vals("lifecycle_status", "ARCHIVED"))
	bad = NoAttemptAfterClose(history(byKey, resumeSection))
	require.Equal(t, []string{"no-attempt-after-close"}, names(bad))
	assert.Empty(t, NoAttemptAfterClose(history(resumeSection, byKey)))

	// A failed ARCHIVED write (a 409: the Run moved) closes nothing.
	closeSection[1].Status = 409
	assert.Empty(t, NoAttemptAfterClose(history(closeSection, resumeSection)))
}
