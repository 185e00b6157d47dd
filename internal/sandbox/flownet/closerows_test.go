package flownet

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// One test per row of archive-run's result table and recovery rules (product-contract
// §1.9), each fault made by the front in front of the emulator: stdout's JSON, the exit
// code, the Run, the audit and the lock.

// closeRow is a FAILED Run of network-midfail.yaml behind a fault front.
type closeRow struct {
	*sandbox
	front        *faultFront
	net, reason  string
	runID, runRK string // run_id, and the Run's $id
	revBefore    string
}

func newCloseRow(t *testing.T) *closeRow {
	t.Helper()
	s := newSandbox(t, nil)
	net := s.network("network-midfail.yaml")
	n, errs := LoadNetwork(net)
	require.Empty(t, errs)
	s.putNetworkRun("netrun_close", n.NetworkID, StatusFailed)
	run := s.run("netrun_close")
	return &closeRow{sandbox: s, front: newFaultFront(t, s), net: net, reason: s.reasonFile("close it"),
		runID: "netrun_close", runRK: run.ID(), revBefore: run.Revision()}
}

func (s *sandbox) run(runID string) kintoneapi.Record {
	s.t.Helper()
	runs := kintoneapi.Where(s.all("state", `record_type in ("NETWORK_RUN") and run_id in (`+q(runID)+`)`), "run_id", runID)
	require.Len(s.t, runs, 1)
	return runs[0]
}

// closeOut is archive-run's result line as decoded JSON, with the exit code.
type closeOut struct {
	code int
	json map[string]any
	raw  cmdResult
}

func (c *closeRow) close() closeOut {
	c.t.Helper()
	r := c.flownet("archive-run", c.net, "--run-id", c.runID, "--reason-file", c.reason)
	return closeOut{code: r.code, json: archiveJSON(c.t.(*testing.T), r), raw: r}
}

func (o closeOut) eventID() string { s, _ := o.json["event_id"].(string); return s }

// expect asserts the JSON line's fields (a nil value: the key is JSON null; an absent key
// in want is not checked) and the exit code.
func (o closeOut) expect(t *testing.T, exit int, want map[string]any) {
	t.Helper()
	assert.Equal(t, exit, o.code, "exit code; %s%s", o.raw.stdout, o.raw.stderr)
	for k, v := range want {
		got, present := o.json[k]
		if v == nil {
			assert.True(t, present && got == nil, "%s is null, got %v (present %v)", k, got, present)
			continue
		}
		assert.Equal(t, v, got, "%s; %s", k, o.raw.stdout)
	}
}

// lifecycle is the Run's lifecycle_status and $revision.
func (c *closeRow) lifecycle() (string, string) {
	r := c.run(c.runID)
	return r.Str("lifecycle_status"), r.Revision()
}

// audit is the RUN_ARCHIVED audit of the event, nil when there is none.
func (c *closeRow) audit(eventID string) kintoneapi.Record {
	c.t.Helper()
	recs := c.all("audit", `record_key in (`+q("OP:"+eventID)+`)`)
	require.LessOrEqual(c.t, len(recs), 1)
	if len(recs) == 0 {
		return nil
	}
	return recs[0]
}

// lockState is the network's one lock record: "released" (a SUCCESS / NORMAL tombstone),
// or "held by <owner>" while it is RUNNING.
func (c *closeRow) lockState() string {
	c.t.Helper()
	locks := c.all("state", `record_type in ("NETWORK_LOCK")`)
	require.Len(c.t, locks, 1)
	l := locks[0]
	switch {
	case strings.HasPrefix(l.Str("record_key"), "LOCKDONE:") && l.Str("status") == StatusSuccess && l.Str("status_reason") == "NORMAL":
		return "released"
	case l.Str("status") == StatusRunning:
		return "held by " + l.Str("owner_invocation_id")
	}
	return "lock " + l.Str("record_key") + " " + l.Str("status") + "/" + l.Str("status_reason")
}

// expectRecords asserts what the row left behind: the Run's lifecycle_status, whether the
// event's RUN_ARCHIVED audit exists, and the lock (see lockState).
func (c *closeRow) expectRecords(t *testing.T, out closeOut, lifecycle string, audited bool, lock string) {
	t.Helper()
	status, _ := c.lifecycle()
	assert.Equal(t, lifecycle, status, "the Run's lifecycle_status")
	if audited {
		assert.NotNil(t, c.audit(out.eventID()), "the RUN_ARCHIVED audit exists")
	} else {
		assert.Nil(t, c.audit(out.eventID()), "no RUN_ARCHIVED audit of this event")
	}
	assert.Equal(t, lock, c.lockState(), "the lock")
}

func (c *closeRow) archivedBy(who string) {
	c.t.Helper()
	_, err := c.admin.UpdateRecord(context.Background(), c.apps["state"].ID, c.runRK,
		kintoneapi.Values(map[string]any{"lifecycle_status": "ARCHIVED", "updated_at": isoMillis(time.Now())}), "")
	require.NoError(c.t, err, who)
}

var runPut = writesField(http.MethodPut, "lifecycle_status")
var auditPost = writesKeyPrefix(http.MethodPost, "OP:archive_")

func TestCloseRowArchivedRecorded(t *testing.T) {
	c := newCloseRow(t)
	out := c.close()
	out.expect(t, 0, map[string]any{"outcome": "ARCHIVED", "audit": "RECORDED", "lock_released": true, "run_revision": float64(atoi(c.revBefore) + 1)})
	_, ok := out.json["code"]
	assert.False(t, ok, "no code on a clean CLOSE")
	c.expectRecords(t, out, "ARCHIVED", true, "released")
}

func TestCloseRowAuditInsertFails(t *testing.T) {
	c := newCloseRow(t)
	c.front.on("audit insert fails", 1, auditPost, respond(http.StatusInternalServerError, "GAIA_UN03", "An unexpected error occurred.", nil))
	out := c.close()
	out.expect(t, 1, map[string]any{"outcome": "ARCHIVED", "audit": "PENDING", "code": "ARCHIVE_AUDIT_FAILED", "lock_released": true,
		"run_revision": float64(atoi(c.revBefore) + 1)})
	_, rev := c.lifecycle()
	assert.Equal(t, out.json["run_revision"], float64(atoi(rev)))
	c.expectRecords(t, out, "ARCHIVED", false, "released")

	// The Run stays closed: a resume is refused and makes no Attempt, and a second CLOSE
	// answers ALREADY_ARCHIVED (the audit stays missing; PENDING said so).
	r := c.flownet("run-network", c.net, "--resume-run", c.runID, "--json")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, `"invocation_result_code":"RUN_NOT_RESUMABLE"`)
	assert.Empty(t, c.all("audit", `record_type in ("NODE_ATTEMPT")`), "no Attempt")
	c.close().expect(t, 0, map[string]any{"outcome": "ALREADY_ARCHIVED", "lock_released": true})
}

func TestCloseRowLostRunPutResponseRereadArchived(t *testing.T) {
	c := newCloseRow(t)
	lost := c.front.on("Run PUT response lost", 1, runPut, loseResponse(nil))
	out := c.close()
	require.Equal(t, 1, c.front.firings(lost))
	out.expect(t, 0, map[string]any{"outcome": "ARCHIVED", "audit": "RECORDED", "lock_released": true, "run_revision": float64(atoi(c.revBefore) + 1)})
	_, rev := c.lifecycle()
	assert.Equal(t, atoi(c.revBefore)+1, atoi(rev), "one write landed")
	assert.Equal(t, 1, c.front.count(runPut), "the re-read showed the write landed: not sent again")
	c.expectRecords(t, out, "ARCHIVED", true, "released")
}

func TestCloseRowRunPutDroppedRereadActiveRetriedOnce(t *testing.T) {
	c := newCloseRow(t)
	c.front.on("Run PUT dropped before kintone", 1, runPut, reset)
	out := c.close()
	out.expect(t, 0, map[string]any{"outcome": "ARCHIVED", "audit": "RECORDED", "lock_released": true, "run_revision": float64(atoi(c.revBefore) + 1)})
	assert.Equal(t, 2, c.front.count(runPut), "one retry after the re-read showed ACTIVE")
	c.expectRecords(t, out, "ARCHIVED", true, "released")
}

// The retry lost too and the Run re-read ACTIVE: the write is known not to have landed and
// the one retry is spent, so REJECTED / ARCHIVE_WRITE_FAILED with the revision re-read (the
// real FlowNet 1.0.0's answer; §1.9 reserves UNCONFIRMED for a Run that cannot be re-read).
func TestCloseRowRunPutDroppedTwiceIsRejected(t *testing.T) {
	c := newCloseRow(t)
	c.front.on("Run PUT dropped before kintone", 2, runPut, reset)
	out := c.close()
	out.expect(t, 1, map[string]any{"outcome": "REJECTED", "code": "ARCHIVE_WRITE_FAILED", "run_revision": float64(atoi(c.revBefore)), "lock_released": true})
	assert.Equal(t, 2, c.front.count(runPut), "exactly one retry")
	_, rev := c.lifecycle()
	assert.Equal(t, c.revBefore, rev)
	c.expectRecords(t, out, "ACTIVE", false, "released")
}

func TestCloseRowLostRunPutResponseUnresolvable(t *testing.T) {
	c := newCloseRow(t)
	// After the write landed kintone stops answering reads of the Run: nothing can tell
	// whether it is archived.
	unreadable := func() {
		c.front.on("Run unreadable", -1, readsWith(`"NETWORK_RUN"`), respond(http.StatusServiceUnavailable, "GAIA_TM12", "Service unavailable.", nil))
	}
	c.front.on("Run PUT response lost", 1, runPut, loseResponse(unreadable))
	out := c.close()
	out.expect(t, 1, map[string]any{"outcome": "UNCONFIRMED", "code": "ARCHIVE_UNCONFIRMED", "run_revision": nil, "lock_released": true})
	_, hasAudit := out.json["audit"]
	assert.False(t, hasAudit)
	c.expectRecords(t, out, "ARCHIVED", false, "released")
}

func TestCloseRowRunPutConflict(t *testing.T) {
	t.Run("someone else archived it: ALREADY_ARCHIVED", func(t *testing.T) {
		c := newCloseRow(t)
		c.front.on("another CLOSE lands first", 1, runPut, before(func() { c.archivedBy("the other CLOSE") }))
		out := c.close()
		_, rev := c.lifecycle()
		out.expect(t, 0, map[string]any{"outcome": "ALREADY_ARCHIVED", "lock_released": true, "run_revision": float64(atoi(rev))})
		c.expectRecords(t, out, "ARCHIVED", false, "released") // the audit is the other CLOSE's to write
	})
	t.Run("the Run moved: UNCONFIRMED", func(t *testing.T) {
		c := newCloseRow(t)
		c.front.on("another writer lands first", 1, runPut, before(func() {
			_, err := c.admin.UpdateRecord(context.Background(), c.apps["state"].ID, c.runRK, kintoneapi.Values(map[string]any{"updated_at": isoMillis(time.Now())}), "")
			require.NoError(t, err)
		}))
		out := c.close()
		out.expect(t, 1, map[string]any{"outcome": "UNCONFIRMED", "code": "ARCHIVE_UNCONFIRMED", "run_revision": nil, "lock_released": true})
		c.expectRecords(t, out, "ACTIVE", false, "released")
	})
	t.Run("GAIA_DA02 after another CLOSE: ALREADY_ARCHIVED", func(t *testing.T) {
		c := newCloseRow(t)
		c.front.on("DA02 loser", 1, runPut, func(w http.ResponseWriter, r frontRequest, fw func() (int, []byte)) {
			c.archivedBy("the other CLOSE")
			respond(http.StatusBadRequest, "GAIA_DA02", "Failed to save the changes because the database could not be locked. Please wait a while and try again.", nil)(w, r, fw)
		})
		out := c.close()
		out.expect(t, 0, map[string]any{"outcome": "ALREADY_ARCHIVED", "lock_released": true})
		c.expectRecords(t, out, "ARCHIVED", false, "released")
	})
	t.Run("GAIA_DA02 with nothing written: ARCHIVE_WRITE_FAILED", func(t *testing.T) {
		c := newCloseRow(t)
		c.front.on("DA02", 1, runPut, respond(http.StatusBadRequest, "GAIA_DA02", "Failed to save the changes because the database could not be locked. Please wait a while and try again.", nil))
		out := c.close()
		out.expect(t, 1, map[string]any{"outcome": "REJECTED", "code": "ARCHIVE_WRITE_FAILED", "lock_released": true, "run_revision": float64(atoi(c.revBefore))})
		assert.Equal(t, 1, c.front.count(runPut), "fail closed: not sent again")
		c.expectRecords(t, out, "ACTIVE", false, "released")
	})
}

func TestCloseRowLostAuditResponse(t *testing.T) {
	t.Run("the record is ours: RECORDED", func(t *testing.T) {
		c := newCloseRow(t)
		c.front.on("audit response lost", 1, auditPost, loseResponse(nil))
		out := c.close()
		out.expect(t, 0, map[string]any{"outcome": "ARCHIVED", "audit": "RECORDED", "lock_released": true})
		assert.Equal(t, 1, c.front.count(auditPost), "adjudicated by the re-read, not sent again")
		c.expectRecords(t, out, "ARCHIVED", true, "released")
	})
	t.Run("the record differs: AUDIT_CONFLICT", func(t *testing.T) {
		c := newCloseRow(t)
		// While the response is lost, the record under the key is rewritten with another
		// previous_status: it is no longer provably this event's.
		c.front.on("audit response lost", 1, auditPost, func(w http.ResponseWriter, r frontRequest, fw func() (int, []byte)) {
			loseResponse(func() {
				key, _ := r.field("record_key")
				recs := c.all("audit", `record_key in (`+q(key)+`)`)
				require.Len(t, recs, 1)
				var doc map[string]any
				require.NoError(t, json.Unmarshal([]byte(recs[0].Str("reason")), &doc))
				doc["previous_status"] = StatusCancelled
				b, _ := json.Marshal(doc)
				_, err := c.admin.UpdateRecord(context.Background(), c.apps["audit"].ID, recs[0].ID(), kintoneapi.Values(map[string]any{"reason": string(b)}), "")
				require.NoError(t, err)
			})(w, r, fw)
		})
		out := c.close()
		out.expect(t, 1, map[string]any{"outcome": "ARCHIVED", "audit": "PENDING", "code": "AUDIT_CONFLICT", "lock_released": true})
		c.expectRecords(t, out, "ARCHIVED", true, "released") // the record under the key, not provably ours
	})
}

func TestCloseRowLeaseLostAfterArchive(t *testing.T) {
	c := newCloseRow(t)
	// Right after the Run PUT lands, another writer rewrites the lock (as a force-unlock
	// and a new owner would): the fencing check before the audit finds it is not ours.
	c.front.on("lease taken after the archive write", 1, runPut, afterForward(func() {
		locks := c.all("state", `record_type in ("NETWORK_LOCK")`)
		require.Len(t, locks, 1)
		_, err := c.admin.UpdateRecord(context.Background(), c.apps["state"].ID, locks[0].ID(),
			kintoneapi.Values(map[string]any{"lease_token": "someone-else", "owner_invocation_id": "invoke_other"}), "")
		require.NoError(t, err)
	}))
	out := c.close()
	out.expect(t, 1, map[string]any{"outcome": "ARCHIVED", "audit": "PENDING", "code": "LEASE_INTERRUPTED_AFTER_ARCHIVE",
		"lock_released": false, "run_revision": float64(atoi(c.revBefore) + 1)})
	c.expectRecords(t, out, "ARCHIVED", false, "held by invoke_other")
}

func TestCloseRowLockReleaseFails(t *testing.T) {
	c := newCloseRow(t)
	c.front.on("tombstone write fails", 1, writesKeyPrefix(http.MethodPut, "LOCKDONE:"), respond(http.StatusServiceUnavailable, "GAIA_TM12", "Service unavailable.", nil))
	out := c.close()
	out.expect(t, 1, map[string]any{"outcome": "ARCHIVED", "audit": "RECORDED", "lock_released": false})
	c.expectRecords(t, out, "ARCHIVED", true, "held by "+out.eventID()) // RUNNING under the CLOSE's event id
}

// The poller's request result for each row (§1.9's last column).
func TestClassifyArchiveChild(t *testing.T) {
	cases := []struct {
		line              string
		exit              int
		state, code, text string
	}{
		{`{"outcome":"ARCHIVED","run_id":"r","event_id":"archive_1","run_revision":3,"audit":"RECORDED","lock_released":true}`, 0, stateDone, "RUN_ARCHIVED", "event_id=archive_1"},
		{`{"outcome":"ARCHIVED","run_id":"r","event_id":"archive_1","run_revision":3,"audit":"PENDING","code":"ARCHIVE_AUDIT_FAILED","lock_released":true}`, 1, stateDone, "RUN_ARCHIVED_AUDIT_PENDING", "code=ARCHIVE_AUDIT_FAILED event_id=archive_1"},
		{`{"outcome":"ARCHIVED","run_id":"r","event_id":"archive_1","run_revision":3,"audit":"PENDING","code":"AUDIT_CONFLICT","lock_released":true}`, 1, stateDone, "RUN_ARCHIVED_AUDIT_PENDING", "code=AUDIT_CONFLICT event_id=archive_1"},
		{`{"outcome":"ARCHIVED","run_id":"r","event_id":"archive_1","run_revision":3,"audit":"PENDING","code":"LEASE_INTERRUPTED_AFTER_ARCHIVE","lock_released":false}`, 1, stateDone, "RUN_ARCHIVED_AUDIT_PENDING", "code=LEASE_INTERRUPTED_AFTER_ARCHIVE event_id=archive_1 lock_release_failed=true"},
		{`{"outcome":"ARCHIVED","run_id":"r","event_id":"archive_1","run_revision":3,"audit":"RECORDED","lock_released":false}`, 1, stateDone, "RUN_ARCHIVED_LOCK_UNRELEASED", "event_id=archive_1"},
		{`{"outcome":"ALREADY_ARCHIVED","run_id":"r","event_id":"archive_1","run_revision":3,"lock_released":true}`, 0, stateDone, "RUN_ALREADY_ARCHIVED", "event_id=archive_1"},
		{`{"outcome":"ALREADY_ARCHIVED","run_id":"r","event_id":"archive_1","run_revision":3,"lock_released":false}`, 1, stateDone, "RUN_ARCHIVED_LOCK_UNRELEASED", "already_archived=true event_id=archive_1"},
		{`{"outcome":"UNCONFIRMED","run_id":"r","event_id":"archive_1","run_revision":null,"code":"ARCHIVE_UNCONFIRMED","lock_released":true}`, 1, stateRejected, "ARCHIVE_UNCONFIRMED", "event_id=archive_1"},
		{`{"outcome":"REJECTED","run_id":"r","event_id":"archive_1","run_revision":2,"code":"ARCHIVE_WRITE_FAILED","lock_released":true}`, 1, stateRejected, "ARCHIVE_WRITE_FAILED", "archive-run rejected the CLOSE: e"},
	}
	for _, tc := range cases {
		state, code, text := classifyArchive(tc.line, tc.exit, "e")
		assert.Equal(t, []string{tc.state, tc.code, tc.text}, []string{state, code, text}, tc.line)
	}
}

// The audit-failed row through the poller: its CLOSE request settles DONE /
// RUN_ARCHIVED_AUDIT_PENDING naming the code and the event, and the archived Run is never
// resumed (no new Attempt), by request or by the CLI.
func TestPollerCloseWithFailedAuditSettlesAuditPending(t *testing.T) {
	ps := newPollSandbox(t)
	front := newFaultFront(t, ps.sandbox)
	net := ps.network("network-success.yaml")
	runID := ps.failedRun(net, "close-audit")
	attempts := len(ps.all("audit", `record_type in ("NODE_ATTEMPT")`))
	require.NotZero(t, attempts)

	fails := front.on("audit insert fails", 1, auditPost, respond(http.StatusInternalServerError, "GAIA_UN03", "An unexpected error occurred.", nil))
	id := ps.add(map[string]any{"request_type": "CLOSE", "run_id": runID, "reason": "close the failed run"})
	r := ps.poll()
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, front.firings(fails), "the archive-run child's audit insert went through the front")
	req := ps.request(id)
	assert.Equal(t, stateDone, req.Str("request_state"))
	assert.Equal(t, "RUN_ARCHIVED_AUDIT_PENDING", req.Str("result_code"))
	msg := req.Str("result_message")
	assert.Regexp(t, `^code=ARCHIVE_AUDIT_FAILED event_id=archive_[0-9a-f-]{36}$`, msg)
	ev := strings.TrimPrefix(msg[strings.Index(msg, "event_id="):], "event_id=")
	assert.Empty(t, ps.all("audit", `record_key in (`+q("OP:"+ev)+`)`), "no RUN_ARCHIVED audit")
	assert.Equal(t, "ARCHIVED", ps.run(runID).Str("lifecycle_status"))
	assert.Empty(t, ps.runningLocks(), "the lock is released")

	rerun := ps.add(map[string]any{"request_type": "RERUN", "run_id": runID, "reason": "try again"})
	r = ps.poll()
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, []string{stateRejected, "RUN_NOT_RESUMABLE"}, []string{ps.request(rerun).Str("request_state"), ps.request(rerun).Str("result_code")})
	res := ps.flownet("run-network", net, "--resume-run", runID, "--json")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stdout, `"invocation_result_code":"RUN_NOT_RESUMABLE"`)
	assert.Len(t, ps.all("audit", `record_type in ("NODE_ATTEMPT")`), attempts, "no new Attempt")
}
