package ksqlflow

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// JOB log record statuses (product-contract §4.4).
const (
	logRunning   = "RUNNING"
	logSuccess   = "SUCCESS"
	logFailed    = "FAILED"
	logAborted   = "ABORTED"
	logCancelled = "CANCELLED"
	logTimeout   = "TIMEOUT"
)

// kintoneTime formats a DATETIME value (kintone keeps minutes; seconds are sent anyway).
func kintoneTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// quoteQ quotes a string for a kintone query.
func quoteQ(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// jobKey builds `<profile>:<job_id>` and applies the key rules: no ':' in either part, the
// reserved `__batch__`, at most 64 UTF-16 units (kintone's unique-field limit).
func jobKey(profile, jobID string) (string, error) {
	if err := validProfileName(profile); err != nil {
		return "", err
	}
	if jobID == "" || strings.ContainsAny(jobID, ":\x00") {
		return "", fmt.Errorf("job id %q: must be non-empty without ':' or NUL", jobID)
	}
	if jobID == "__batch__" {
		return "", fmt.Errorf("job id __batch__ is reserved for the run-all batch lock")
	}
	k := profile + ":" + jobID
	if n := len(utf16.Encode([]rune(k))); n > 64 {
		return "", fmt.Errorf("job key %q is %d UTF-16 units, more than 64", k, n)
	}
	return k, nil
}

// checkJobKeyArg validates a --job-key given by an operator.
func checkJobKeyArg(k string) error {
	prof, job, ok := strings.Cut(k, ":")
	if !ok {
		return fmt.Errorf("--job-key %q: expected <profile>:<job_id>", k)
	}
	_, err := jobKey(prof, job)
	return err
}

type jobLog struct {
	c   *conn
	app string
}

// lockConflictError is a held job key (resultCode LOCK_CONFLICT).
type lockConflictError struct {
	key      string
	recordID string
	batchID  string
}

func (e *lockConflictError) Error() string {
	return fmt.Sprintf("job lock %s is held by JOB log record %s (batch %s)", e.key, e.recordID, e.batchID)
}

// lockUnavailableError means the lock could not be taken or the start marker not written
// (resultCode LOCK_UNAVAILABLE); nothing ran.
type lockUnavailableError struct{ err error }

func (e *lockUnavailableError) Error() string { return "JOB log unavailable: " + e.err.Error() }
func (e *lockUnavailableError) Unwrap() error { return e.err }

// findByKey reads the record holding job key (unique, so kintone compares it exactly).
func (j *jobLog) findByKey(ctx context.Context, key string) ([]kintoneapi.Record, error) {
	return j.c.kc.GetRecords(ctx, j.app, "job_key = "+quoteQ(key)+" order by $id asc limit 2", nil)
}

// acquire inserts the RUNNING record that is the job lock and returns its id and revision.
func (j *jobLog) acquire(ctx context.Context, key, execID string, rec kintoneapi.Record) (id, rev string, err error) {
	for try := 0; try < 2; try++ {
		id, rev, err = j.c.kc.AddRecord(ctx, j.app, rec)
		if err == nil {
			return id, rev, nil
		}
		switch {
		case kintoneapi.IsCode(err, "CB_VA01") && kintoneapi.NamesField(err, "job_key"):
			// A unique violation is a conflict only if the re-read finds the key; if the
			// holder finished in between, the insert is tried once more.
			recs, rerr := j.findByKey(ctx, key)
			if rerr != nil {
				return "", "", &lockUnavailableError{fmt.Errorf("re-read job key after unique violation: %w", rerr)}
			}
			if len(recs) > 0 {
				return "", "", &lockConflictError{key: key, recordID: recs[0].ID(), batchID: recs[0].Str("batch_id")}
			}
			continue
		case kintoneapi.IsNetwork(err):
			// Lost response: the insert may have landed. Our execution id decides. It is
			// non-unique text, which kintone matches by tokens ("x" also finds "x_trial2"),
			// so every match is read and only an exact one counts.
			recs, rerr := j.c.kc.GetAll(ctx, j.app, "execution_id = "+quoteQ(execID), nil)
			recs = kintoneapi.Where(recs, "execution_id", execID)
			if rerr == nil && len(recs) == 1 {
				return recs[0].ID(), recs[0].Revision(), nil
			}
			return "", "", &lockUnavailableError{fmt.Errorf("insert job lock: %w", err)}
		default:
			return "", "", &lockUnavailableError{fmt.Errorf("insert job lock: %w", err)}
		}
	}
	return "", "", &lockUnavailableError{fmt.Errorf("insert job lock %s: unique violation but no holder found twice", key)}
}

// markStarted writes runner_execution_started_at on the lock record (expected revision 1)
// and returns the new revision. A lost response is adjudicated by re-reading the record and
// comparing at minute precision (kintone keeps minutes); anything else fails closed.
func (j *jobLog) markStarted(ctx context.Context, id, rev string, at time.Time) (string, error) {
	v := kintoneTime(at)
	newRev, err := j.c.kc.UpdateRecord(ctx, j.app, id, kintoneapi.Values(map[string]any{"runner_execution_started_at": v}), rev)
	if err == nil {
		return newRev, nil
	}
	if kintoneapi.IsNetwork(err) {
		rec, rerr := j.c.kc.GetRecord(ctx, j.app, id)
		if rerr == nil && sameMinute(rec.Str("runner_execution_started_at"), at) {
			return rec.Revision(), nil
		}
	}
	return "", &lockUnavailableError{fmt.Errorf("write durable start marker: %w", err)}
}

func sameMinute(stored string, at time.Time) bool {
	t, err := time.Parse(time.RFC3339, stored)
	return err == nil && t.UTC().Truncate(time.Minute).Equal(at.UTC().Truncate(time.Minute))
}

// finish writes the final status, clears job_key and copies it to job_key_done, fenced by
// the revision this execution last wrote (a force-unlock in between makes it a conflict).
func (j *jobLog) finish(ctx context.Context, id, rev, key string, fields map[string]any) error {
	fields["job_key"] = ""
	fields["job_key_done"] = key
	_, err := j.c.kc.UpdateRecord(ctx, j.app, id, kintoneapi.Values(fields), rev)
	if err != nil {
		if kintoneapi.IsCode(err, "GAIA_CO02") {
			return fmt.Errorf("final JOB log update of record %s: the record changed meanwhile (force-unlocked?): %w", id, err)
		}
		return fmt.Errorf("final JOB log update of record %s: %w", id, err)
	}
	return nil
}

// ---- inspect-lock / force-unlock-job ----

// LockRecord is the holder summary of inspect-lock.
type LockRecord struct {
	RecordID   string  `json:"recordId"`
	BatchID    string  `json:"batchId"`
	StartedAt  *string `json:"startedAt"`
	Host       string  `json:"host"`
	ScriptName string  `json:"scriptName"`
}

func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Force-unlock outcomes.
const (
	outReleased    = "RELEASED"
	outNotFound    = "NOT_FOUND"
	outNotRunning  = "NOT_RUNNING"
	outConflict    = "CONFLICT"
	outUnconfirmed = "UNCONFIRMED"
)

type unlockBefore struct {
	BatchID   string  `json:"batchId"`
	StartedAt *string `json:"startedAt"`
	Host      string  `json:"host"`
}

type unlockRequest struct {
	key, reason, confirmedBy, evidenceRef string
	now                                   time.Time
	eventID                               string
}

// forceUnlock releases a held job key with a revision-fenced update. It returns the
// outcome, the record id (if any) and the holder summary.
func (j *jobLog) forceUnlock(ctx context.Context, r unlockRequest) (outcome string, recordID *string, before *unlockBefore, next string) {
	recs, err := j.findByKey(ctx, r.key)
	if defect.ForceUnlockMissesDeadHolder {
		recs, err = j.c.kc.GetRecords(ctx, j.app, "job_key_done = "+quoteQ(r.key)+" order by $id asc limit 2", nil) // planted defect: the holder is looked up by the field only a finished run fills
	}
	if err != nil {
		return outUnconfirmed, nil, nil, "the JOB log could not be read (" + err.Error() + "); retry force-unlock-job"
	}
	if len(recs) == 0 {
		return outNotFound, nil, nil, ""
	}
	rec := recs[0]
	id := rec.ID()
	before = &unlockBefore{BatchID: rec.Str("batch_id"), StartedAt: optStr(rec.Str("runner_execution_started_at")), Host: rec.Str("host")}
	if rec.Str("status") != logRunning {
		return outNotRunning, &id, before, "the record holding the key is " + rec.Str("status") + ", not RUNNING; inspect it in the JOB log app"
	}
	detail := fmt.Sprintf("LOCK_RECOVERY event=%s jobKey=%s reason=%q confirmedBy=%q evidenceRef=%q executedAt=%s",
		r.eventID, r.key, r.reason, r.confirmedBy, r.evidenceRef, r.now.UTC().Format(time.RFC3339Nano))
	if old := rec.Str("log_detail"); old != "" {
		detail += "\n" + old
	}
	upd := kintoneapi.Values(map[string]any{
		"status":        logFailed,
		"job_key":       "",
		"job_key_done":  r.key,
		"finished_at":   kintoneTime(r.now),
		"log_detail":    detail,
		"error_message": "job lock released by force-unlock-job: " + r.reason,
	})
	_, err = j.c.kc.UpdateRecord(ctx, j.app, id, upd, rec.Revision())
	switch {
	case err == nil:
		return outReleased, &id, before, ""
	case kintoneapi.IsCode(err, "GAIA_CO02"):
		return outConflict, &id, before, "the record changed since it was read (the job may have finished); run inspect-lock again"
	case kintoneapi.IsNetwork(err):
		// Lost response: the re-read shows whether our release landed (our event id is in log_detail).
		again, rerr := j.c.kc.GetRecord(ctx, j.app, id)
		if rerr == nil && again.Str("job_key") == "" && strings.Contains(again.Str("log_detail"), "event="+r.eventID) {
			return outReleased, &id, before, ""
		}
	}
	return outUnconfirmed, &id, before, "the release could not be confirmed (" + err.Error() + "); run inspect-lock"
}
