package flownet

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// An operation request record (product-contract §3.4, §4.3) as the poller reads it.

// Request types and states.
const (
	reqRerun   = "RERUN"
	reqStop    = "STOP"
	reqRelease = "RELEASE"
	reqStart   = "START"
	reqClose   = "CLOSE"

	stateRequested = "REQUESTED"
	stateAccepted  = "ACCEPTED"
	stateDone      = "DONE"
	stateRejected  = "REJECTED"
	stateCancelled = "CANCELLED"

	// cancelOption is the single option of the cancel_requested check box.
	cancelOption = "取消"

	// System field codes of a Japanese kintone app.
	fieldCreator   = "作成者"
	fieldCreatedAt = "作成日時"
)

// Request validation issue codes (§2.7).
const (
	issueFieldTypeInvalid      = "FIELD_TYPE_INVALID"
	issueCreatorInvalid        = "CREATOR_INVALID"
	issueUnknownChoice         = "UNKNOWN_CHOICE"
	issueIDInvalid             = "ID_INVALID"
	issueRevisionInvalid       = "REVISION_INVALID"
	issueDatetimeInvalid       = "DATETIME_INVALID"
	issueRequired              = "REQUIRED"
	issueValueTooLong          = "VALUE_TOO_LONG"
	issueFieldNotAllowed       = "FIELD_NOT_ALLOWED"
	issueClaimFieldsIncomplete = "CLAIM_FIELDS_INCOMPLETE"
	issueStateFieldsInvalid    = "STATE_FIELDS_INVALID"
)

// opRequest is one request record.
type opRequest struct {
	id, revision, state string
	cancel              []string // cancel_requested as read
	cancelWellFormed    bool     // [] or ["取消"]
	rec                 kintoneapi.Record
}

var decimalRE = regexp.MustCompile(`^[1-9][0-9]*$`)

// parseEnvelope reads the minimal envelope of a record ($id, $revision, request_state,
// cancel_requested); ok is false when the record cannot be identified, so nothing may be
// written to it.
func parseEnvelope(r kintoneapi.Record) (opRequest, bool) {
	q := opRequest{id: r.ID(), revision: r.Revision(), state: r.Str("request_state"), rec: r}
	if !decimalRE.MatchString(q.id) || !decimalRE.MatchString(q.revision) {
		return q, false
	}
	q.cancel, q.cancelWellFormed = checkBoxValues(r["cancel_requested"].Value)
	if q.cancelWellFormed && len(q.cancel) == 1 && q.cancel[0] != cancelOption {
		q.cancelWellFormed = false
	}
	if len(q.cancel) > 1 {
		q.cancelWellFormed = false
	}
	return q, true
}

// cancelRequested is true only for exactly ["取消"]; a malformed value never counts.
func (q opRequest) cancelRequested() bool {
	return q.cancelWellFormed && len(q.cancel) == 1
}

func checkBoxValues(v any) ([]string, bool) {
	if v == nil {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func (q opRequest) str(code string) string { return q.rec.Str(code) }

func (q opRequest) typ() string { return q.str("request_type") }

// creatorCode is 作成者.code ("" when missing or not a user value).
func (q opRequest) creatorCode() string {
	m, _ := q.rec[fieldCreator].Value.(map[string]any)
	s, _ := m["code"].(string)
	return s
}

// requestedBy is the correlation value every child of this request carries:
// app-request:<$id>:<percent-encoded creator code>, at most 1024 characters.
func (q opRequest) requestedBy() (string, error) {
	code := q.creatorCode()
	if code == "" {
		return "", coded("REQUESTED_BY_INVALID", "request %s has no creator code to correlate with", q.id)
	}
	v := "app-request:" + q.id + ":" + encodeURIComponent(code)
	if defect.RequestedByWithoutCreator {
		v = "app-request:" + q.id + ":" // planted defect: the correlation loses the creator code
	}
	if utf8.RuneCountInString(v) > 1024 {
		return "", coded("REQUESTED_BY_INVALID", "requested_by of request %s would be longer than 1024 characters", q.id)
	}
	return v, nil
}

// encodeURIComponent percent-encodes s as JavaScript's encodeURIComponent does: every UTF-8
// byte except A–Z a–z 0–9 - _ . ! ~ * ' ( ) becomes %XX (upper-case hex).
func encodeURIComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

var requestTypes = map[string]bool{reqRerun: true, reqStop: true, reqRelease: true, reqStart: true, reqClose: true}

var canonicalUTC = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.000)?Z$`)

// validateRequested lists the issues of a REQUESTED record (sorted, unique); none means it
// may be claimed.
func validateRequested(q opRequest) []string {
	issues := map[string]bool{}
	text := func(code string, max int, required bool) string {
		f, ok := q.rec[code]
		if ok && f.Value != nil {
			if _, isStr := f.Value.(string); !isStr {
				issues[issueFieldTypeInvalid] = true
				return ""
			}
		}
		v := q.str(code)
		if required && strings.TrimSpace(v) == "" {
			issues[issueRequired] = true
		}
		if utf8.RuneCountInString(v) > max {
			issues[issueValueTooLong] = true
		}
		return v
	}
	typ := text("request_type", 128, true)
	if typ != "" && !requestTypes[typ] {
		issues[issueUnknownChoice] = true
	}
	text("reason", 65535, true)
	runID := text("run_id", 128, false)
	networkID := text("network_id", 128, false)
	text("business_key", 128, false)
	if rf := text("rerun_from_node", 128, false); rf != "" && typ != reqRerun {
		issues[issueFieldNotAllowed] = true
	}
	switch {
	case typ == reqStart && strings.TrimSpace(networkID) == "":
		issues[issueRequired] = true
	case typ != reqStart && typ != "" && strings.TrimSpace(runID) == "":
		issues[issueRequired] = true
	}
	if sf := q.str("scheduled_for"); sf != "" && !canonicalUTC.MatchString(sf) {
		issues[issueDatetimeInvalid] = true
	}
	if !q.cancelWellFormed {
		issues[issueUnknownChoice] = true
	}
	for _, f := range []string{"claimed_at", "claim_heartbeat_at", "claimed_host", "result_code", "result_message"} {
		if q.str(f) != "" {
			issues[issueStateFieldsInvalid] = true
		}
	}
	if c := q.creatorCode(); c == "" || utf8.RuneCountInString(c) > 256 {
		issues[issueCreatorInvalid] = true
	}
	out := make([]string, 0, len(issues))
	for k := range issues {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// claim is what an ACCEPTED record says about its claim.
type claim struct {
	host       string
	at, beatAt time.Time
}

// claimOf reads the claim fields of an ACCEPTED record; they are all-or-nothing.
func claimOf(q opRequest) (claim, error) {
	var cl claim
	host, at, beat := q.str("claimed_host"), q.str("claimed_at"), q.str("claim_heartbeat_at")
	if host == "" || at == "" || beat == "" {
		return cl, coded(issueClaimFieldsIncomplete, "request %s is ACCEPTED without complete claim fields", q.id)
	}
	var ok1, ok2 bool
	cl.host = host
	cl.at, ok1 = parseTime(at)
	cl.beatAt, ok2 = parseTime(beat)
	if !ok1 || !ok2 {
		return cl, coded(issueDatetimeInvalid, "request %s has unreadable claim times", q.id)
	}
	return cl, nil
}

// revisionPlus1 is the revision a successful PUT at rev leaves.
func revisionPlus1(rev string) string {
	n, _ := strconv.Atoi(rev)
	return strconv.Itoa(n + 1)
}
