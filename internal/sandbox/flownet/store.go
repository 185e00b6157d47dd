package flownet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// store wraps the kintone client with FlowNet's persistence rules (product-contract §2.6,
// §8.7): inserts adjudicate CB_VA01 and lost responses by re-reading the unique record_key;
// updates are revision-fenced and adjudicate GAIA_DA02 and lost responses by re-reading.
type store struct {
	kc                   *kintoneapi.Client
	stateApp, auditApp   string
	logApp               string
	retryEvery, retryFor time.Duration
	// lease, when set (run-network, once it holds the network lock), fences every insert
	// and update (see leaseGone).
	lease leaseFence
	// net counts kc's transport failures (nil: none are counted): the lease monitor asks
	// whether kintone was unreachable since its last confirmed lease write (renew).
	net *netWatch
}

// transportFailures is how many kintone requests of this store got no (whole) answer so far.
func (s *store) transportFailures() int64 {
	if s.net == nil {
		return 0
	}
	return s.net.failures.Load()
}

// netWatch counts the transport failures of one HTTP client: no response, or a response
// cut short. A request our own context ended is not counted: that is not kintone being
// unreachable.
type netWatch struct {
	base     http.RoundTripper
	failures atomic.Int64
}

// watchTransport puts a netWatch in front of hc's transport.
func watchTransport(hc *http.Client) *netWatch {
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	w := &netWatch{base: base}
	hc.Transport = w
	return w
}

func (w *netWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(r)
	if err != nil {
		w.failed(r)
		return resp, err
	}
	resp.Body = &watchedBody{ReadCloser: resp.Body, w: w, r: r}
	return resp, nil
}

func (w *netWatch) failed(r *http.Request) {
	if r.Context().Err() == nil {
		w.failures.Add(1)
	}
}

// watchedBody counts a response body that breaks off before its end (once per response).
type watchedBody struct {
	io.ReadCloser
	w      *netWatch
	r      *http.Request
	failed bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && !b.failed {
		b.failed = true
		b.w.failed(b.r)
	}
	return n, err
}

// leaseFence is the network lock as the store sees it.
type leaseFence interface {
	deadline() time.Time              // the last confirmed lease write plus the lease
	confirm(ctx context.Context) bool // one heartbeat, even when the lease is uncertain
}

// leaseGone refuses a control-plane write once the network lease has run out, unless one
// heartbeat confirms the lock is still ours (FINAL_WRITE_CONFIRMED, §3.7): a write sent on
// an expired, unconfirmed lease could land after another owner took over, and an unconfirmed
// lease loss leaves the records untouched. So the drain's retries end with the lease.
func (s *store) leaseGone(ctx context.Context) error {
	if s.lease == nil || defect.DrainPastLeaseDeadline {
		return nil
	}
	if d := s.lease.deadline(); time.Now().After(d) && !s.lease.confirm(ctx) {
		return coded(codeLeaseInterruptedCode, "the network lease ran out at %s and could not be confirmed; the write was not sent", isoMillis(d))
	}
	return nil
}

// Repository error codes.
const (
	codeDuplicateRecord   = "DUPLICATE_RECORD"
	codeRevisionConflict  = "REVISION_CONFLICT"
	codeAmbiguousWrite    = "AMBIGUOUS_WRITE"
	codeRecordNotFound    = "RECORD_NOT_FOUND"
	codeMultipleRecords   = "MULTIPLE_RECORDS"
	codeUniqueKeyTooLong  = "UNIQUE_KEY_TOO_LONG"
	codeRemoteError       = "REMOTE_ERROR"
	kintoneUniqueMaxUnits = 64
)

// q quotes a string literal for a kintone query (the client escapes only \ and ").
func q(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// isoMillis formats t as JavaScript's toISOString does; kintone keeps the minute.
func isoMillis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// wrapRemote turns a client error into a coded repository error.
func wrapRemote(what string, err error) error {
	if err == nil {
		return nil
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return err
	}
	switch {
	case kintoneapi.IsCode(err, "GAIA_CO02"):
		return &codedError{Code: codeRevisionConflict, Msg: what + ": revision conflict", Err: err}
	case kintoneapi.IsNetwork(err):
		return &codedError{Code: codeAmbiguousWrite, Msg: what + ": outcome unknown (transport error)", Err: err}
	}
	return &codedError{Code: codeRemoteError, Msg: fmt.Sprintf("%s: %v", what, err), Err: err}
}

// find reads the records matching query (one call; callers keep result sets small).
func (s *store) find(ctx context.Context, app, query string) ([]kintoneapi.Record, error) {
	return s.readRecords(ctx, app, func() ([]kintoneapi.Record, error) { return s.kc.GetRecords(ctx, app, query, nil) })
}

// findAll pages through every record matching condition.
func (s *store) findAll(ctx context.Context, app, condition string) ([]kintoneapi.Record, error) {
	return s.readRecords(ctx, app, func() ([]kintoneapi.Record, error) { return s.kc.GetAll(ctx, app, condition, nil) })
}

// readRecords runs one read of app under the read retry and names the app in its error.
func (s *store) readRecords(ctx context.Context, app string, read func() ([]kintoneapi.Record, error)) ([]kintoneapi.Record, error) {
	var recs []kintoneapi.Record
	err := s.retryRead(ctx, func() error {
		var err error
		recs, err = read()
		return err
	})
	if err != nil {
		return nil, wrapRemote("read app "+app, err)
	}
	return recs, nil
}

// findExact pages through every record matching condition, which selects by the
// non-unique text field with `= value` or `in (value)`, and keeps those whose field is
// exactly value: kintone's = / in on such a field is a token match ("k" also finds
// "k_trial2"), so the query narrows the read and Go decides. All pages are read, so token
// matches can never push an exact one out of a limit.
func (s *store) findExact(ctx context.Context, app, condition, field, value string) ([]kintoneapi.Record, error) {
	recs, err := s.findAll(ctx, app, condition)
	if err != nil {
		return nil, err
	}
	return kintoneapi.Where(recs, field, value), nil
}

// findOne returns the single record query matches, nil when there is none; more than one
// is the error tooMany builds from the count. query must select by unique fields only
// (record_key, $id): those kintone compares exactly.
func (s *store) findOne(ctx context.Context, app, query string, tooMany func(n int) error) (kintoneapi.Record, error) {
	recs, err := s.find(ctx, app, query)
	if err != nil {
		return nil, err
	}
	return one(recs, tooMany)
}

// findOneExact is findOne for a condition on a non-unique text field (see findExact).
func (s *store) findOneExact(ctx context.Context, app, condition, field, value string, tooMany func(n int) error) (kintoneapi.Record, error) {
	recs, err := s.findExact(ctx, app, condition, field, value)
	if err != nil {
		return nil, err
	}
	return one(recs, tooMany)
}

func one(recs []kintoneapi.Record, tooMany func(n int) error) (kintoneapi.Record, error) {
	switch len(recs) {
	case 0:
		return nil, nil
	case 1:
		return recs[0], nil
	}
	return nil, tooMany(len(recs))
}

// byKey returns the single record with record_key k, nil when there is none.
func (s *store) byKey(ctx context.Context, app, k string) (kintoneapi.Record, error) {
	return s.findOne(ctx, app, "record_key in ("+q(k)+")", func(n int) error {
		return coded(codeMultipleRecords, "%d records share record_key %s", n, k)
	})
}

func (s *store) byID(ctx context.Context, app, id string) (kintoneapi.Record, error) {
	recs, err := s.find(ctx, app, "$id in ("+q(id)+") limit 1")
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, coded(codeRecordNotFound, "record %s not found in app %s", id, app)
	}
	return recs[0], nil
}

// retryRead retries transport failures of reads every retryEvery for up to retryFor
// (control-plane drain, §3.7); kintone error responses are returned at once.
func (s *store) retryRead(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(s.retryFor)
	for {
		err := f()
		if err == nil || !kintoneapi.IsNetwork(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(s.retryEvery):
		}
	}
}

// insert creates a record whose unique record_key is k. On CB_VA01 or a lost response it
// re-reads by k: if the record found is ours (same identity field values), that is success.
func (s *store) insert(ctx context.Context, app, k string, rec kintoneapi.Record, identity ...string) (id, rev string, err error) {
	if utf16Len(k) > kintoneUniqueMaxUnits {
		return "", "", coded(codeUniqueKeyTooLong, "record_key %s is longer than %d characters", k, kintoneUniqueMaxUnits)
	}
	rec["record_key"] = kintoneapi.Field{Value: k}
	deadline := time.Now().Add(s.retryFor)
	for {
		if err := s.leaseGone(ctx); err != nil {
			return "", "", err
		}
		id, rev, err = s.kc.AddRecord(ctx, app, rec)
		if err == nil {
			return id, rev, nil
		}
		dup := kintoneapi.IsCode(err, "CB_VA01")
		if !dup && defect.RunInsertLostResponseNotAdjudicated && kintoneapi.IsNetwork(err) {
			// planted defect: a lost insert response is a failure, never re-read by its key
			return "", "", &codedError{Code: codeAmbiguousWrite, Msg: fmt.Sprintf("insert %s: %v", k, err), Err: err}
		}
		if !dup && !kintoneapi.IsNetwork(err) {
			return "", "", wrapRemote("insert "+k, err)
		}
		got, rerr := s.byKey(ctx, app, k)
		if rerr != nil {
			return "", "", &codedError{Code: codeAmbiguousWrite, Msg: fmt.Sprintf("insert %s: outcome unknown and re-read failed: %v", k, rerr), Err: err}
		}
		if got != nil {
			for _, f := range identity {
				if got.Str(f) != fieldString(rec[f].Value) {
					return "", "", &codedError{Code: codeDuplicateRecord, Msg: "record_key " + k + " already belongs to another record", Err: err}
				}
			}
			return got.ID(), got.Revision(), nil
		}
		if dup && kintoneapi.NamesField(err, "record_key") {
			// kintone said the key is taken, yet no record holds it now (deleted since, or
			// not visible to this token): it is not ours, so it is another record's value.
			return "", "", &codedError{Code: codeDuplicateRecord, Msg: "record_key " + k + " is taken (kintone refused it as a duplicate)", Err: err}
		}
		if dup {
			// CB_VA01 about another field: the record is invalid, not a duplicate.
			return "", "", wrapRemote("insert "+k, err)
		}
		if time.Now().After(deadline) {
			return "", "", wrapRemote("insert "+k, err)
		}
		select {
		case <-ctx.Done():
			return "", "", wrapRemote("insert "+k, err)
		case <-time.After(s.retryEvery):
		}
	}
}

// update writes rec to the record whose unique record_key is key (kintone's updateKey), with
// the expected $revision: the real FlowNet writes every repository record it owns — Run,
// Node State, CANCEL_REQUEST hold, Attempt, Invocation — by updateKey on record_key, never
// by $id (dist/persistence/kintone/repository.js put → client.putRecord). Only writes that
// change the record_key itself (a lock's release into its tombstone, force-unlock) and the
// request app's records (which have no record_key) go by id: updateByID.
func (s *store) update(ctx context.Context, app, key string, rec kintoneapi.Record, rev string) (string, error) {
	return s.put(ctx, app, "record "+key, rec, rev,
		func(rev string) (string, error) { return s.kc.UpdateByKey(ctx, app, "record_key", key, rec, rev) },
		func() (kintoneapi.Record, error) {
			got, err := s.byKey(ctx, app, key)
			if err == nil && got == nil {
				err = coded(codeRecordNotFound, "no record with record_key %s in app %s", key, app)
			}
			return got, err
		})
}

// updateByID is update for a record addressed by its $id (see update for which ones).
func (s *store) updateByID(ctx context.Context, app, id string, rec kintoneapi.Record, rev string) (string, error) {
	return s.put(ctx, app, "record "+id, rec, rev,
		func(rev string) (string, error) { return s.kc.UpdateRecord(ctx, app, id, rec, rev) },
		func() (kintoneapi.Record, error) { return s.byID(ctx, app, id) })
}

// put sends one revision-fenced update (send) and judges its failure by re-reading the
// record (reread). A stale revision is 409 GAIA_CO02 ⇒ REVISION_CONFLICT. The loser of two
// concurrent updates may instead get 400 GAIA_DA02 ("the database could not be locked"),
// which says nothing about who won, so it is adjudicated by re-reading (§2.6): a newer
// revision or a missing record ⇒ REVISION_CONFLICT; the revision unchanged ⇒ nothing was
// written, and the update fails closed (REMOTE_ERROR, no resend — kintone-api.md "else fail
// closed"). A lost response is re-read too: our values at rev+1 mean the write landed; the
// unchanged revision means it did not, and it is sent again; anything else is a revision
// conflict. what names the record in errors; send is given the revision to fence with.
func (s *store) put(ctx context.Context, app, what string, rec kintoneapi.Record, rev string,
	send func(rev string) (string, error), reread func() (kintoneapi.Record, error)) (string, error) {
	deadline := time.Now().Add(s.retryFor)
	for {
		if err := s.leaseGone(ctx); err != nil {
			return "", err
		}
		nr, err := send(rev)
		if err == nil {
			return nr, nil
		}
		co02, da02 := kintoneapi.IsCode(err, "GAIA_CO02"), kintoneapi.IsCode(err, "GAIA_DA02")
		// planted defects: the loser's answer (409 GAIA_CO02, or DA02 taken for "wait and try
		// again") is resent at the revision a re-read shows, over the winner's write
		if da02 && defect.GaiaDa02NotFolded || co02 && defect.GaiaCo02Resent {
			if got, rerr := reread(); rerr == nil {
				rev = got.Revision()
				continue
			}
		}
		if co02 {
			return "", wrapRemote("update "+what, err)
		}
		if !da02 && !kintoneapi.IsNetwork(err) {
			return "", wrapRemote("update "+what, err)
		}
		got, rerr := reread()
		if rerr != nil {
			if ce, ok := rerr.(*codedError); ok && ce.Code == codeRecordNotFound {
				return "", &codedError{Code: codeRevisionConflict, Msg: "update " + what + ": record disappeared", Err: err}
			}
			return "", &codedError{Code: codeAmbiguousWrite, Msg: fmt.Sprintf("update %s: outcome unknown and re-read failed: %v", what, rerr), Err: err}
		}
		cur, _ := strconv.Atoi(got.Revision())
		want, _ := strconv.Atoi(rev)
		switch {
		case rev != "" && cur == want+1 && !da02 && sameValues(got, rec):
			return got.Revision(), nil
		case rev != "" && cur != want:
			return "", &codedError{Code: codeRevisionConflict, Msg: fmt.Sprintf("update %s: revision moved from %s to %s", what, rev, got.Revision()), Err: err}
		case da02:
			return "", &codedError{Code: codeRemoteError, Msg: fmt.Sprintf("update %s: kintone could not lock the record and nothing was written (revision still %s)", what, got.Revision()), Err: err}
		}
		if time.Now().After(deadline) {
			return "", wrapRemote("update "+what, err)
		}
		select {
		case <-ctx.Done():
			return "", wrapRemote("update "+what, err)
		case <-time.After(s.retryEvery):
		}
	}
}

// sameValues reports whether every written field reads back equal (DATETIMEs to the minute,
// numbers numerically; FILE fields are skipped because kintone replaces upload keys).
func sameValues(got, wrote kintoneapi.Record) bool {
	for k, f := range wrote {
		g := got[k]
		if g.Type == "FILE" {
			continue
		}
		a, b := got.Str(k), fieldString(f.Value)
		if a == b {
			continue
		}
		if ta, ok := parseTime(a); ok {
			if tb, ok := parseTime(b); ok && ta.Truncate(time.Minute).Equal(tb.Truncate(time.Minute)) {
				continue
			}
		}
		if fa, err := strconv.ParseFloat(a, 64); err == nil {
			if fb, err := strconv.ParseFloat(b, 64); err == nil && fa == fb {
				continue
			}
		}
		return false
	}
	return true
}

func fieldString(v any) string {
	return kintoneapi.Record{"x": {Value: v}}.Str("x")
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// vals builds a write record.
func vals(kv map[string]any) kintoneapi.Record { return kintoneapi.Values(kv) }

func atoi(s string) int {
	i, _ := strconv.Atoi(strings.TrimSpace(s))
	return i
}

// jsonList decodes a JSON-array MULTI_LINE_TEXT value ("" → nil).
func jsonList(s string) []string {
	var out []string
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if err := jsonUnmarshal([]byte(s), &out); err != nil {
		return nil
	}
	return out
}
