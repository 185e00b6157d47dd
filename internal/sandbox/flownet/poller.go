package flownet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// poll-requests [--check]: the one-shot operation-request poller (product-contract §1.10,
// §3.4). One cycle: read REQUESTED, recover stale ACCEPTED claims, terminalize invalid and
// withdrawn requests, then claim each valid request with a revision-fenced PUT, run its child
// command while heartbeating the claim, and write the outcome back.

const (
	codePollRequestsFailed   = "POLL_REQUESTS_FAILED"
	codeRequestAppUnreadable = "REQUEST_APP_UNREADABLE"
	pollPageSize             = 100
)

// Warning codes (§1.10).
const (
	warnUnidentifiable     = "REQUEST_RECORD_UNIDENTIFIABLE"
	warnCancelConflict     = "CANCEL_FINALIZE_CONFLICT"
	warnFinalizeAbandoned  = "RESULT_FINALIZE_ABANDONED"
	warnResultMismatch     = "RESULT_STATE_MISMATCH"
	warnHeartbeatFailed    = "CLAIM_HEARTBEAT_FAILED"
	warnStaleStatusMissing = "STALE_STATUS_UNAVAILABLE"
)

// pollCounts is the counters line, as the product counts (§1.10 cycle order: every REQUESTED
// record read is unidentifiable, invalid or valid). requested: valid REQUESTED records read,
// withdrawn ones included; invalid: invalid REQUESTED records read, whatever became of them
// (cancelled, rejected, or left after a conflict); skipped: unidentifiable records; claimed:
// claims won; completed: claimed requests whose outcome was written; cancelled: withdrawals
// written (CANCELLED, valid and invalid alike); stale: ACCEPTED claims rejected as STALE.
type pollCounts struct {
	requested, claimed, completed, cancelled, invalid, stale, skipped int
}

func (n pollCounts) String() string {
	return fmt.Sprintf("poll-requests: requested=%d claimed=%d completed=%d cancelled=%d invalid=%d stale=%d skipped=%d",
		n.requested, n.claimed, n.completed, n.cancelled, n.invalid, n.stale, n.skipped)
}

type poller struct {
	c      *cli
	pc     *pollConfig
	kc     *kintoneapi.Client
	counts pollCounts
	// startedThisCycle is the planted defect start-coalesced-in-cycle's memory (racedefects.go).
	startedThisCycle map[string]startAnswer
}

// pollRequests is `poll-requests [--check]`.
func (c *cli) pollRequests(args []string) int {
	check := false
	var problems []string
	for _, a := range args {
		switch {
		case a == "--check" && !check:
			check = true
		case a == "--check":
			problems = append(problems, "--check was specified more than once")
		default:
			problems = append(problems, "unknown argument "+a+" (poll-requests accepts only --check)")
		}
	}
	if len(problems) > 0 {
		return c.argumentError("poll-requests", problems)
	}
	fail := func(err error) int {
		return c.fail(err, codePollRequestsFailed)
	}
	pc, err := c.loadPollConfig()
	if err != nil {
		return fail(err)
	}
	hc, err := kintoneapi.HTTPClientWithCA(c.getenv("SSL_CERT_FILE"))
	if err != nil {
		return fail(err)
	}
	p := &poller{c: c, pc: pc, kc: kintoneapi.New(pc.baseURL, hc, map[string]string{pc.appID: pc.token})}
	ctx := context.Background()
	if check {
		if _, err := p.read(ctx, stateRequested, "作成日時 asc, $id asc"); err != nil {
			return fail(err)
		}
		fmt.Fprintf(c.stdout, "poll-requests check: ok networks=%d request_app=readable\n", len(pc.networks))
		return 0
	}
	if err := p.cycle(ctx); err != nil {
		return fail(err)
	}
	fmt.Fprintln(c.stdout, p.counts.String())
	return 0
}

func (p *poller) warn(code, format string, args ...any) {
	fmt.Fprintf(p.c.stderr, "Warning [%s]: %s\n", code, fmt.Sprintf(format, args...))
}

// read lists the records in state, in the given order, one page. A failure is the global
// error of the cycle: the request app itself cannot be read. The message keeps the HTTP
// status only (never the request, its token or kintone's text).
func (p *poller) read(ctx context.Context, state, order string) ([]kintoneapi.Record, error) {
	query := fmt.Sprintf(`request_state in (%s) order by %s limit %d`, q(state), order, pollPageSize)
	recs, err := p.kc.GetRecords(ctx, p.pc.appID, query, nil)
	if err != nil {
		if defect.PollerReadErrorSwallowed {
			return nil, nil // planted defect: an unreadable request app reads as an empty one
		}
		what := "a network error"
		if s := kintoneapi.StatusOf(err); s != 0 {
			what = fmt.Sprintf("HTTP %d", s)
		}
		return nil, coded(codeRequestAppUnreadable, "the request app %s could not be read (%s); nothing was claimed or changed", p.pc.appID, what)
	}
	return recs, nil
}

// get re-reads one request by $id.
func (p *poller) get(ctx context.Context, id string) (opRequest, error) {
	recs, err := p.kc.GetRecords(ctx, p.pc.appID, `$id in (`+q(id)+`) limit 1`, nil)
	if err != nil {
		return opRequest{}, err
	}
	if len(recs) == 0 {
		return opRequest{}, coded(codeRecordNotFound, "request %s no longer exists", id)
	}
	r, ok := parseEnvelope(recs[0])
	if !ok {
		return r, coded(warnUnidentifiable, "request %s cannot be identified", id)
	}
	return r, nil
}

// put writes rec to request id at revision rev; it returns the new revision.
func (p *poller) put(ctx context.Context, id, rev string, rec map[string]any) (string, error) {
	return p.kc.UpdateRecord(ctx, p.pc.appID, id, vals(rec), rev)
}

func isConflict(err error) bool {
	return kintoneapi.StatusOf(err) == 409 || kintoneapi.IsCode(err, "GAIA_CO02") || kintoneapi.IsCode(err, "GAIA_DA02")
}

// cycle is one poll (§1.10 cycle order).
func (p *poller) cycle(ctx context.Context) error {
	recs, err := p.read(ctx, stateRequested, "作成日時 asc, $id asc")
	if err != nil {
		return err
	}
	if err := p.recoverStale(ctx); err != nil {
		return err
	}
	var valid []opRequest
	for _, r := range recs {
		req, ok := parseEnvelope(r)
		if !ok {
			p.counts.skipped++
			p.warn(warnUnidentifiable, "a REQUESTED record without a usable $id/$revision was skipped")
			continue
		}
		if issues := validateRequested(req); len(issues) > 0 {
			p.counts.invalid++
			p.terminalizeInvalid(ctx, req, issues)
			continue
		}
		p.counts.requested++
		valid = append(valid, req)
	}
	for _, req := range valid {
		if req.cancelRequested() && !defect.CancelRequestedIgnored { // planted defect: a withdrawn request is claimed and run
			p.cancelBeforeClaim(ctx, req)
			continue
		}
		p.claimAndRun(ctx, req)
	}
	return nil
}

// cancelBeforeClaim terminalizes a withdrawn request: nothing is executed.
func (p *poller) cancelBeforeClaim(ctx context.Context, req opRequest) {
	_, err := p.put(ctx, req.id, req.revision, map[string]any{"request_state": stateCancelled,
		"result_code": "CANCELLED_BY_REQUESTER", "result_message": "requester cancelled before claim"})
	if err != nil {
		p.warn(warnCancelConflict, "request %s: the cancellation could not be written (%s); left for the next cycle", req.id, briefErr(err))
		return
	}
	p.counts.cancelled++
}

// terminalizeInvalid rejects a malformed REQUESTED record; a well-formed cancellation takes
// precedence over validation.
func (p *poller) terminalizeInvalid(ctx context.Context, req opRequest, issues []string) {
	if req.cancelRequested() {
		p.cancelBeforeClaim(ctx, req)
		return
	}
	_, err := p.put(ctx, req.id, req.revision, map[string]any{"request_state": stateRejected,
		"result_code": "REQUEST_INVALID", "result_message": "request validation failed: " + strings.Join(issues, ",")})
	if err != nil {
		p.warn(warnFinalizeAbandoned, "request %s: the rejection could not be written (%s); left for the next cycle", req.id, briefErr(err))
	}
}

// claimAndRun claims one request (revision-fenced: a conflict means another poller won),
// runs it while heartbeating the claim, and writes the outcome.
func (p *poller) claimAndRun(ctx context.Context, req opRequest) {
	now := isoMillis(p.c.now())
	rev := req.revision
	if defect.ClaimWithoutRevision {
		rev = "" // planted defect: the claim PUT carries no revision, so two pollers can both win
	}
	newRev, err := p.put(ctx, req.id, rev, map[string]any{"request_state": stateAccepted,
		"claimed_at": now, "claimed_host": p.pc.host, "claim_heartbeat_at": now})
	if err != nil && isConflict(err) && defect.ClaimConflictAdoptedByHost {
		// Planted defect: a lost claim is taken for one whose response was lost when the
		// request is now ACCEPTED by this host name, though another poller on the same host
		// may have claimed it (§1.10 step 4: a conflict means another poller won → skip).
		if cur, gerr := p.get(ctx, req.id); gerr == nil && cur.state == stateAccepted && cur.str("claimed_host") == p.pc.host {
			newRev, err, now = cur.revision, nil, cur.str("claimed_at")
		}
	}
	if err != nil {
		if !isConflict(err) {
			p.warn(warnFinalizeAbandoned, "request %s: the claim could not be written (%s); left for the next cycle", req.id, briefErr(err))
		}
		return
	}
	p.counts.claimed++
	beat := p.startHeartbeat(req.id, newRev, now)
	state, code, msg := p.process(ctx, req)
	beat.stop()
	if p.finalize(ctx, req.id, state, code, msg) {
		p.counts.completed++
	}
}

// finalize writes the outcome of a claimed request: re-read, still ACCEPTED, append
// " (cancel_ignored)" when the requester withdrew after the claim, revision-fenced PUT; on a
// conflict re-read once (done if already identical) and try again.
func (p *poller) finalize(ctx context.Context, id, state, code, msg string) bool {
	firstCancel := false
	for attempt := 0; attempt < 2; attempt++ {
		cur, err := p.get(ctx, id)
		if err != nil {
			p.warn(warnFinalizeAbandoned, "request %s: %s; its outcome %s/%s was not written", id, briefErr(err), state, code)
			return false
		}
		cancel := cur.cancelRequested()
		if attempt == 0 {
			firstCancel = cancel
		} else if defect.FinalizeRetryDropsCancelIgnored {
			cancel = firstCancel // planted defect: the retry after a conflict re-sends the first read's message
		}
		m := msg
		if cancel {
			m += " (cancel_ignored)"
		}
		m = capRunes(m, 65535)
		if cur.state == state && cur.str("result_code") == code && cur.str("result_message") == m {
			return true
		}
		if cur.state != stateAccepted {
			p.warn(warnResultMismatch, "request %s is %s, not ACCEPTED; its outcome %s/%s was not written", id, cur.state, state, code)
			return false
		}
		_, err = p.put(ctx, id, cur.revision, map[string]any{"request_state": state, "result_code": code, "result_message": m})
		if err == nil {
			return true
		}
		if !isConflict(err) {
			p.warn(warnFinalizeAbandoned, "request %s: %s; its outcome %s/%s was not written", id, briefErr(err), state, code)
			return false
		}
	}
	p.warn(warnFinalizeAbandoned, "request %s kept changing; its outcome %s/%s was not written (it stays ACCEPTED)", id, state, code)
	return false
}

// claimBeat renews claim_heartbeat_at while a claimed request is processed. A failure only
// warns: the child is never killed for it.
type claimBeat struct {
	stopOnce sync.Once
	quit     chan struct{}
	done     chan struct{}
}

func (p *poller) startHeartbeat(id, rev, claimedAt string) *claimBeat {
	b := &claimBeat{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(p.pc.heartbeat)
		defer t.Stop()
		for {
			select {
			case <-b.quit:
				return
			case <-t.C:
			}
			nr, err := p.put(context.Background(), id, rev, map[string]any{"claim_heartbeat_at": isoMillis(p.c.now())})
			if err == nil {
				rev = nr
				continue
			}
			if !isConflict(err) {
				p.warn(warnHeartbeatFailed, "request %s: %s", id, briefErr(err))
				continue
			}
			// Someone else wrote the record (the requester's cancel flag): re-read, and go on
			// only while the claim is still ours.
			cur, gerr := p.get(context.Background(), id)
			if gerr != nil || cur.state != stateAccepted || cur.str("claimed_host") != p.pc.host || !sameMinute(cur.str("claimed_at"), claimedAt) {
				p.warn(warnHeartbeatFailed, "request %s: the claim is no longer ours; heartbeats stop", id)
				return
			}
			rev = cur.revision
		}
	}()
	return b
}

func (b *claimBeat) stop() {
	b.stopOnce.Do(func() { close(b.quit) })
	<-b.done
}

func sameMinute(a, b string) bool {
	ta, ok1 := parseTime(a)
	tb, ok2 := parseTime(b)
	return ok1 && ok2 && ta.Truncate(time.Minute).Equal(tb.Truncate(time.Minute))
}

// recoverStale rejects ACCEPTED requests whose claim stopped heartbeating
// (claim_heartbeat_at + stale_after + 60 s < now) as STALE — never re-executing them — but
// only when their Run can be matched uniquely and is not live; otherwise they stay ACCEPTED.
func (p *poller) recoverStale(ctx context.Context) error {
	recs, err := p.read(ctx, stateAccepted, "claim_heartbeat_at asc, $id asc")
	if err != nil {
		return err
	}
	now := p.c.now()
	for _, r := range recs {
		req, ok := parseEnvelope(r)
		if !ok {
			p.warn(warnUnidentifiable, "an ACCEPTED record without a usable $id/$revision was left alone")
			continue
		}
		cl, err := claimOf(req)
		if err != nil {
			p.warn(warnUnidentifiable, "%s", err.Error())
			continue
		}
		if !cl.beatAt.Add(p.pc.staleAfter + kintoneDatetimeAllowance*time.Second).Before(now) {
			continue
		}
		runID, ok := p.staleRunMatch(ctx, req, now)
		if !ok {
			continue
		}
		state, code := stateRejected, "STALE"
		msg := fmt.Sprintf("claimed by %s at %s, last heartbeat %s: the outcome of this %s on Run %s is unknown and it will not be retried; check the Run and do not request another operation until it is confirmed",
			cl.host, isoMillis(cl.at), isoMillis(cl.beatAt), req.typ(), runID)
		if defect.StaleRequestReexecuted {
			state, code, msg = p.process(ctx, req) // planted defect: a stale claim is executed again
		}
		if _, err := p.put(ctx, req.id, req.revision, map[string]any{"request_state": state, "result_code": code, "result_message": msg}); err != nil {
			p.warn(warnFinalizeAbandoned, "request %s: the STALE outcome could not be written (%s); it stays ACCEPTED", req.id, briefErr(err))
			continue
		}
		p.counts.stale++
	}
	return nil
}

// staleRunMatch finds the one Run a stale request is about (RERUN/STOP/RELEASE/CLOSE by
// run_id in the allow-listed networks, START by the business key it derives) and says
// whether the request may be rejected as STALE: the Run is unique and not live.
func (p *poller) staleRunMatch(ctx context.Context, req opRequest, now time.Time) (string, bool) {
	var doc *statusDoc
	var run *statusRun
	if req.typ() == reqStart {
		e := p.pc.entry(req.str("network_id"))
		if e == nil {
			return "", false
		}
		key, err := DeriveBusinessKey(e.Net, KeyInput{BusinessKey: req.str("business_key"), HasBusinessKey: req.str("business_key") != "",
			ScheduledFor: req.str("scheduled_for"), HasScheduledFor: req.str("scheduled_for") != ""}, now)
		if err != nil {
			return "", false
		}
		d, found, err := p.status(ctx, e.NetworkID, "--business-key", key.BusinessKey)
		if err != nil {
			p.warn(warnStaleStatusMissing, "request %s: %s; left ACCEPTED", req.id, err.Error())
			return "", false
		}
		if !found || len(d.Runs) != 1 {
			return "", false
		}
		doc, run = d, d.Runs[0]
	} else {
		m, err := p.resolveRun(ctx, req.str("run_id"))
		if err != nil {
			if errCode(err, "") == "STATUS_UNAVAILABLE" {
				p.warn(warnStaleStatusMissing, "request %s: %s; left ACCEPTED", req.id, err.Error())
			}
			return "", false
		}
		doc, run = m.doc, m.run
	}
	if liveOwner(doc, run, now) {
		return "", false
	}
	return run.RunID, true
}

// briefErr is an error for a warning line: the HTTP status or transport failure, never a
// kintone body.
func briefErr(err error) string {
	if s := kintoneapi.StatusOf(err); s != 0 {
		return fmt.Sprintf("HTTP %d", s)
	}
	if kintoneapi.IsNetwork(err) {
		return "network error"
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.Code + ": " + ce.Msg
	}
	return "error"
}

// writeReasonFile writes a request's reason to a private temp file (os.CreateTemp makes it
// 0600) for cancel-run or archive-run; the caller removes it.
func writeReasonFile(reason string) (string, error) {
	f, err := os.CreateTemp("", "ksql-flownet-reason-*.txt")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(reason); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func capRunes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max])
}
