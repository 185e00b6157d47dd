package requests

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
)

// requestDomain: records of the operation-request app (RERUN, STOP, RELEASE, START) — made
// only through the harness's write guard (reason "<scope>:<label>"), deleted after the
// scenario, and read back exactly (by $id) to check what the poller decided. A reason body
// is never decoded into a view, a note or an assertion: the archive must not hold it.
type requestDomain struct{}

func (d requestDomain) register(reg stepdef.Registry) {
	reg.Step(`^the request app holds no REQUESTED or ACCEPTED request$`, d.noPendingRequest)
	reg.Step(`^a RERUN request for the run is created`+asName+`$`, d.rerunForTheRun)
	reg.Step(`^a RERUN request from node "([^"]+)" for the run is created`+asName+`$`, d.rerunFromNode)
	reg.Step(`^a RERUN request for the run id "([^"]+)" is created`+asName+`$`, d.rerunForRunID)
	reg.Step(`^a RERUN request for the run is created with the secret reason label "([a-z0-9-]+)"$`, d.rerunWithSecretLabel)
	reg.Step(`^a RERUN request for the run is created and withdrawn by its requester as "([^"]+)"$`, d.rerunWithdrawn)
	reg.Step(`^a (STOP|RELEASE) request for the run is created`+asName+`$`, d.stopOrRelease)
	reg.Step(`^a START request for network "([^"]+)" with business key "([^"]+)" is created`+asName+`$`, d.startWithKey)
	reg.Step(`^a START request for network "([^"]+)" with scheduled_for "([^"]+)" is created`+asName+`$`, d.startScheduled)
	reg.Step(`^a START request for network "([^"]+)" is created with:$`, d.startWithTable)
	reg.Step(`^a START request for network "([^"]+)" with scheduled_for "([^"]+)" is refused by kintone itself$`, d.startRefusedByKintone)
	reg.Step(`^an ACCEPTED RERUN request for the run, claimed (\d+) minutes ago by a dead poller, is inserted as "([^"]+)"$`, d.staleRerun)
	reg.Step(`^an ACCEPTED START request for network "([^"]+)" with business key "([^"]+)", claimed (\d+) minutes ago by a dead poller, is inserted as "([^"]+)"$`, d.staleStart)
	reg.Step(`^`+reqRef+` is "([^"]+)" with result code "([^"]+)"$`, d.requestIsWithCode)
	reg.Step(`^`+reqRef+` is "([^"]+)" with result code "([^"]+)" and a message containing "([^"]+)"$`, d.requestIsWithMessage)
	reg.Step(`^`+reqRef+` is "([^"]+)" with result code "([^"]+)" and a message naming the run$`, d.requestNamesTheRun)
	reg.Step(`^`+reqRef+` is "CANCELLED" with result code "([^"]+)" and was never claimed$`, d.requestNeverClaimed)
	reg.Step(`^`+reqRef+` becomes "([^"]+)"$`, d.requestBecomes)
	reg.Step(`^the claim of `+reqRef+` is renewed: its revision grows while it stays "ACCEPTED"$`, d.claimRenewed)
	reg.Step(`^the last invocation was requested by the request: app-request, its record id and its creator's code$`, d.lastInvocationRequestedBy)
	reg.Step(`^the result message of `+reqRef+` ends with "invocation_id=" and the last invocation's id$`, d.messageEndsWithInvocation)
	reg.Step(`^requests "([^"]+)" and "([^"]+)" settled as one START: one DONE, the other DONE "NOOP_ALREADY_SUCCESS" or REJECTED "LOCK_CONFLICT" or "RUN_ALREADY_EXISTS"$`, d.settledAsOneStart)
	reg.Step(`^the request is recorded$`, d.requestRecorded)
	reg.Step(`^the request is unchanged$`, d.requestUnchanged)
}

// asName is the optional naming suffix of a request step; reqRef addresses one later.
const (
	asName = `(?: as "([^"]+)")?`
	reqRef = `(the request|request "[^"]+")`
)

// madeRequest is one request the scenario wrote, and what it wrote.
type madeRequest struct {
	name                                                        string
	id                                                          string
	typ, runID, networkID, businessKey, scheduledFor, rerunFrom string
	label, reason                                               string // never reported
	revision                                                    string // $revision it was created at
	acceptedRev                                                 int    // $revision when first seen ACCEPTED
}

// requestState is the scenario's requests, its guarded writer and a recorded request.
type requestState struct {
	guard    *kintoneguard.Client
	made     []*madeRequest
	swept    bool     // the cleanup is pushed
	recorded []string // the recorded request's fields, for "unchanged"
	recordID string
}

var RequestKey = scenario.NewKey[requestState]("requests")

func requestsOf(ctx context.Context) *requestState { return RequestKey.Of(scenario.From(ctx)) }

// writer returns the guarded client of the scope, and pushes (once) the cleanup that deletes
// the scope's requests after the scenario: pushed before the first write, so it runs even
// when that write half-failed.
func (rs *requestState) writer(ctx context.Context) (*kintoneguard.Client, error) {
	sc := kit.SceneOf(ctx)
	if rs.guard == nil {
		g, err := requestGuard(ctx, sc.Suite.Target.BaseURL, sc.Suite.Target.CAFile)
		if err != nil {
			return nil, err
		}
		rs.guard = g
	}
	if !rs.swept {
		rs.swept = true
		g := rs.guard
		sc.St.Defer("delete the scenario's requests in the request app", func(ctx context.Context) error {
			var ids []string
			for _, m := range rs.made {
				ids = append(ids, m.id)
				noteRequestSummary(ctx, sc, m)
			}
			n, err := g.SweepRequests(ctx, ids)
			if err == nil {
				fmt.Fprintf(sc.St.Log, "  cleanup: deleted %d requests of scope %s\n", n, g.Scope())
			}
			return err
		})
	}
	return rs.guard, nil
}

// requestGuard is the scope's guarded client of the request app, sending to baseURL (the
// target's, or a proxy's in front of it) and trusting the CAs of caFiles.
func requestGuard(ctx context.Context, baseURL string, caFiles ...string) (*kintoneguard.Client, error) {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	t := sc.Suite.Target
	req, err := t.App(target.RoleRequest)
	if err != nil {
		return nil, err
	}
	hc, err := kintoneapi.HTTPClientWithCAs(caFiles...)
	if err != nil {
		return nil, err
	}
	apps := kintoneguard.Apps{State: t.Apps[target.RoleState].ID, Audit: t.Apps[target.RoleAudit].ID, Request: req.ID,
		Log: t.Apps[target.RoleLog].ID, CSV: t.Apps[target.RoleCSV].ID}
	for _, r := range []string{target.RoleCustomers, target.RoleDeals} {
		if a, ok := t.Apps[r]; ok {
			apps.Business = append(apps.Business, a.ID)
		}
	}
	return kintoneguard.New(kintoneapi.New(baseURL, hc, map[string]string{req.ID: req.Token("full")}), apps, fx.Scope().ID(), kintoneguard.Options{Profile: t.Profile, Counter: sc.St.API})
}

// find resolves a request reference: "the request" is the latest one made.
// ids are the $ids of the requests the scenario made.
func (rs *requestState) IDs() []string {
	out := make([]string, len(rs.made))
	for i, m := range rs.made {
		out[i] = m.id
	}
	return out
}

func (rs *requestState) find(ref string) (*madeRequest, error) {
	if ref == "the request" {
		if len(rs.made) == 0 {
			return nil, fmt.Errorf("no request was created in this scenario")
		}
		return rs.made[len(rs.made)-1], nil
	}
	name := strings.TrimSuffix(strings.TrimPrefix(ref, `request "`), `"`)
	for _, m := range rs.made {
		if m.name == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("no request named %q was created", name)
}

// create writes one request through the guard. extra holds machine fields (a dead claim).
func (rs *requestState) create(ctx context.Context, m *madeRequest, extra map[string]any) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	if m.name == "" {
		m.name = fmt.Sprintf("request-%d", len(rs.made)+1)
	}
	for _, o := range rs.made {
		if o.name == m.name {
			return fmt.Errorf("a request named %q was already created", m.name)
		}
	}
	if m.label == "" {
		m.label = strings.ToLower(m.typ) + "-" + kit.ProcFileName(strings.ToLower(m.name))
	}
	m.reason = fx.Scope().Reason(m.label)
	if r := sc.Suite.Redact; r != nil {
		r.AddReason(m.reason)
	}
	g, err := rs.writer(ctx)
	if err != nil {
		return err
	}
	rec := map[string]any{"request_type": m.typ, "reason": m.reason}
	for k, v := range map[string]string{"run_id": m.runID, "network_id": m.networkID, "business_key": m.businessKey,
		"scheduled_for": m.scheduledFor, "rerun_from_node": m.rerunFrom} {
		if v != "" {
			rec[k] = v
		}
	}
	for k, v := range extra {
		rec[k] = v
	}
	id, rev, err := g.AddRecord(ctx, sc.App(target.RoleRequest), kintoneapi.Values(rec))
	if err != nil {
		return fmt.Errorf("create %s request %q: %w", m.typ, m.name, err)
	}
	m.id, m.revision = id, rev
	rs.made = append(rs.made, m)
	fmt.Fprintf(sc.St.Log, "  request %q: %s record %s\n", m.name, m.typ, id)
	return nil
}

// noteRequestSummary records what became of a request, as a summary (scenarios.md §2.7: id,
// type, state, cancel_requested, claimed_at, result_code, whether a result message exists):
// never its reason or its message. It runs in the cleanup, whose context carries no scenario,
// hence the scene. A read that fails leaves no note.
func noteRequestSummary(ctx context.Context, sc *kit.Scene, m *madeRequest) {
	recs, err := kit.ReadExact(ctx, sc, target.RoleRequest, kit.DecodeOperationRequest, kit.FieldIs("$id", m.id))
	if err != nil || len(recs) != 1 {
		return
	}
	r := recs[0]
	sc.St.Note("request "+m.name, fmt.Sprintf("id=%s type=%s state=%s cancel_requested=%t claimed_at=%s result_code=%s result_message=%t",
		r.RecordID, r.RequestType, kit.OrNone(r.RequestState), r.CancelRequested, kit.OrNone(r.ClaimedAt), kit.OrNone(r.ResultCode), r.ResultMessage != ""))
}

// readRequest reads one request record exactly.
func readRequest(ctx context.Context, m *madeRequest) (kit.OperationRequest, error) {
	recs, err := kit.ReadExact(ctx, kit.SceneOf(ctx), target.RoleRequest, kit.DecodeOperationRequest, kit.FieldIs("$id", m.id))
	if err != nil {
		return kit.OperationRequest{}, err
	}
	if len(recs) != 1 {
		return kit.OperationRequest{}, fmt.Errorf("request %q (record %s): %d records read", m.name, m.id, len(recs))
	}
	return recs[0], nil
}

// readNamedRequest finds the request a feature names and reads its record exactly.
func readNamedRequest(ctx context.Context, ref string) (*madeRequest, kit.OperationRequest, error) {
	m, err := requestsOf(ctx).find(ref)
	if err != nil {
		return nil, kit.OperationRequest{}, err
	}
	r, err := readRequest(ctx, m)
	return m, r, err
}

// ---- creating requests ----

func (requestDomain) noPendingRequest(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	pending, err := kintoneguard.PendingReader{API: sc.Reader}.PendingRequests(ctx, sc.App(target.RoleRequest))
	if err != nil {
		return err
	}
	var ids []string
	for _, p := range pending {
		ids = append(ids, "#"+p.ID+" "+p.State)
	}
	// Another poller could act on a pending request while this scenario runs (§3.2).
	return sc.St.On("request.request_state").Equal("REQUESTED/ACCEPTED records in the request app before the scenario", kit.OrNone(""), kit.OrNone(strings.Join(ids, ", ")))
}

func rerunOf(ctx context.Context, name string) (*madeRequest, error) {
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return nil, err
	}
	return &madeRequest{name: name, typ: "RERUN", runID: id}, nil
}

func (requestDomain) rerunForTheRun(ctx context.Context, name string) error {
	m, err := rerunOf(ctx, name)
	if err != nil {
		return err
	}
	return requestsOf(ctx).create(ctx, m, nil)
}

func (requestDomain) rerunFromNode(ctx context.Context, node, name string) error {
	m, err := rerunOf(ctx, name)
	if err != nil {
		return err
	}
	n, err := kit.FixturesOf(ctx).Node(node)
	if err != nil {
		return err
	}
	m.rerunFrom = n.ID
	return requestsOf(ctx).create(ctx, m, nil)
}

func (requestDomain) rerunForRunID(ctx context.Context, runID, name string) error {
	return requestsOf(ctx).create(ctx, &madeRequest{name: name, typ: "RERUN", runID: kit.Expand(ctx, runID, "")}, nil)
}

// rerunWithSecretLabel: the label itself must not reach any output or the archive, so it is
// registered with the redactor as well as the reason body.
func (requestDomain) rerunWithSecretLabel(ctx context.Context, label string) error {
	m, err := rerunOf(ctx, "")
	if err != nil {
		return err
	}
	m.label = label
	if r := kit.SceneOf(ctx).Suite.Redact; r != nil {
		r.AddReason(label)
	}
	return requestsOf(ctx).create(ctx, m, nil)
}

// rerunWithdrawn creates a RERUN and then sets cancel_requested = ["取消"] with the revision
// it was created at, as the board plugin does (product-contract §4.3).
func (requestDomain) rerunWithdrawn(ctx context.Context, name string) error {
	m, err := rerunOf(ctx, name)
	if err != nil {
		return err
	}
	rs := requestsOf(ctx)
	if err := rs.create(ctx, m, nil); err != nil {
		return err
	}
	_, err = rs.guard.UpdateRecord(ctx, kit.SceneOf(ctx).App(target.RoleRequest), m.id,
		kintoneapi.Values(map[string]any{"cancel_requested": []string{"取消"}}), m.revision)
	if err != nil {
		return fmt.Errorf("withdraw request %q: %w", name, err)
	}
	return nil
}

func (requestDomain) stopOrRelease(ctx context.Context, typ, name string) error {
	m, err := rerunOf(ctx, name)
	if err != nil {
		return err
	}
	m.typ = typ
	return requestsOf(ctx).create(ctx, m, nil)
}

// startOn is a START request for a labelled network.
func startOn(ctx context.Context, label, name string) (*madeRequest, error) {
	n, err := kit.FixturesOf(ctx).NetworkOf(`network "` + label + `"`)
	if err != nil {
		return nil, err
	}
	return &madeRequest{name: name, typ: "START", networkID: n.NetworkID}, nil
}

func (requestDomain) startWithKey(ctx context.Context, label, key, name string) error {
	m, err := startOn(ctx, label, name)
	if err != nil {
		return err
	}
	m.businessKey = kit.Expand(ctx, key, m.networkID)
	return requestsOf(ctx).create(ctx, m, nil)
}

func (requestDomain) startScheduled(ctx context.Context, label, at, name string) error {
	m, err := startOn(ctx, label, name)
	if err != nil {
		return err
	}
	m.scheduledFor = at
	return requestsOf(ctx).create(ctx, m, nil)
}

// startWithTable: a START whose fields come from a two-column table (field | value), with
// {scope} and {network_id} filled in; fields: business_key, scheduled_for, run_id, name.
func (requestDomain) startWithTable(ctx context.Context, label string, table *godog.Table) error {
	m, err := startOn(ctx, label, "")
	if err != nil {
		return err
	}
	for _, row := range table.Rows {
		if len(row.Cells) != 2 {
			return fmt.Errorf("START table: every row is | field | value |")
		}
		v := kit.Expand(ctx, strings.TrimSpace(row.Cells[1].Value), m.networkID)
		switch f := strings.TrimSpace(row.Cells[0].Value); f {
		case "business_key":
			m.businessKey = v
		case "scheduled_for":
			m.scheduledFor = v
		case "run_id":
			m.runID = v
		case "name":
			m.name = v
		default:
			return fmt.Errorf("START table: unknown field %q (business_key, scheduled_for, run_id, name)", f)
		}
	}
	return requestsOf(ctx).create(ctx, m, nil)
}

// startRefusedByKintone: kintone itself refuses a malformed DATETIME; the guard let the
// write through (it is in scope), so the refusal is kintone's validation error.
func (requestDomain) startRefusedByKintone(ctx context.Context, label, at string) error {
	sc := kit.SceneOf(ctx)
	m, err := startOn(ctx, label, "")
	if err != nil {
		return err
	}
	m.scheduledFor = at
	err = requestsOf(ctx).create(ctx, m, nil)
	var ae *kintoneapi.APIError
	seen := "accepted (record created)"
	switch {
	case errors.As(err, &ae):
		seen = fmt.Sprintf("HTTP %d %s", ae.Status, ae.Code)
	case err != nil:
		return err
	}
	// kintone's code for a malformed DATETIME was never measured (CB_VA01 is its general
	// validation code): the status is compared, the code noted, and nothing may be persisted.
	sc.St.Note("kintone's refusal of scheduled_for "+at, seen)
	if err := sc.St.On("harness.request.post").Assert(fmt.Sprintf("HTTP status of kintone's answer to a START request with scheduled_for %q", at), 400, seen, ae != nil && ae.Status == 400); err != nil {
		return err
	}
	recs, err := kit.ReadExact(ctx, sc, target.RoleRequest, func(r kintoneapi.Record) string { return r.Str("reason") }, kit.FieldIs("request_type", m.typ), kit.FieldIs("network_id", m.networkID))
	if err != nil {
		return err
	}
	created := 0
	for _, reason := range recs {
		if reason == m.reason {
			created++
		}
	}
	return sc.St.On("harness.request.post").Equal("request records created by the refused START", 0, created)
}

// deadClaim is the machine fields of a claim a poller made minutes ago and never renewed.
func deadClaim(ctx context.Context, minutes int) map[string]any {
	at := time.Now().UTC().Add(-time.Duration(minutes) * time.Minute).Format("2006-01-02T15:04:05Z")
	return map[string]any{"request_state": "ACCEPTED", "claimed_at": at, "claim_heartbeat_at": at,
		"claimed_host": kit.FixturesOf(ctx).Scope().Principal("dead_poller")}
}

func (requestDomain) staleRerun(ctx context.Context, minutes int, name string) error {
	m, err := rerunOf(ctx, name)
	if err != nil {
		return err
	}
	return requestsOf(ctx).create(ctx, m, deadClaim(ctx, minutes))
}

func (requestDomain) staleStart(ctx context.Context, label, key string, minutes int, name string) error {
	m, err := startOn(ctx, label, name)
	if err != nil {
		return err
	}
	m.businessKey = kit.Expand(ctx, key, m.networkID)
	return requestsOf(ctx).create(ctx, m, deadClaim(ctx, minutes))
}

// ---- what the poller decided ----

// outcome reads a request and compares its state (and code, when given) in that order.
func outcome(ctx context.Context, ref, state, code string) (*madeRequest, kit.OperationRequest, error) {
	sc := kit.SceneOf(ctx)
	m, err := requestsOf(ctx).find(ref)
	if err != nil {
		return nil, kit.OperationRequest{}, err
	}
	r, err := readRequest(ctx, m)
	if err != nil {
		return m, r, err
	}
	if err := sc.St.On("request.request_state").Equal("request_state of request "+m.name, state, kit.OrNone(r.RequestState)); err != nil {
		return m, r, fmt.Errorf("%w (result %s: %s)", err, kit.OrNone(r.ResultCode), kit.OrNone(r.ResultMessage))
	}
	if code != "" {
		if err := sc.St.On("request.result_code").Equal("result_code of request "+m.name, code, kit.OrNone(r.ResultCode)); err != nil {
			return m, r, fmt.Errorf("%w (message: %s)", err, kit.OrNone(r.ResultMessage))
		}
	}
	return m, r, nil
}

func (requestDomain) requestIsWithCode(ctx context.Context, ref, state, code string) error {
	_, _, err := outcome(ctx, ref, state, code)
	return err
}

func (requestDomain) requestIsWithMessage(ctx context.Context, ref, state, code, part string) error {
	m, r, err := outcome(ctx, ref, state, code)
	if err != nil {
		return err
	}
	return kit.SceneOf(ctx).St.On("request.result_message").Assert("result_message of request "+m.name, "contains "+part, kit.OrNone(r.ResultMessage), strings.Contains(r.ResultMessage, part))
}

func (requestDomain) requestNamesTheRun(ctx context.Context, ref, state, code string) error {
	m, r, err := outcome(ctx, ref, state, code)
	if err != nil {
		return err
	}
	id, err := kit.CurrentRunID(ctx)
	if err != nil {
		return err
	}
	return kit.SceneOf(ctx).St.On("request.result_message").Assert("result_message of request "+m.name+" names the run", "contains "+id, kit.OrNone(r.ResultMessage), strings.Contains(r.ResultMessage, id))
}

// requestNeverClaimed: a request withdrawn before any claim is CANCELLED without claim
// fields (nothing ran it).
func (requestDomain) requestNeverClaimed(ctx context.Context, ref, code string) error {
	m, r, err := outcome(ctx, ref, "CANCELLED", code)
	if err != nil {
		return err
	}
	return kit.SceneOf(ctx).St.On("request.claimed_at", "request.claimed_host").Equal("claim fields of request "+m.name+" (claimed_at | claimed_host)", "(none) | (none)", kit.OrNone(r.ClaimedAt)+" | "+kit.OrNone(r.ClaimedHost))
}

// requestBecomes waits for a request state (a poller still running in the background);
// the revision it was first seen ACCEPTED at is kept for the heartbeat check.
func (requestDomain) requestBecomes(ctx context.Context, ref, state string) error {
	sc := kit.SceneOf(ctx)
	m, err := requestsOf(ctx).find(ref)
	if err != nil {
		return err
	}
	var last kit.OperationRequest
	err = wait.For(ctx, wait.RequestState, "request "+m.name+" to become "+state, func(ctx context.Context) (bool, string, error) {
		r, err := readRequest(ctx, m)
		if err != nil {
			return false, "", err
		}
		last = r
		obs := fmt.Sprintf("%s (revision %s)", kit.OrNone(r.RequestState), r.Revision)
		if r.RequestState != state && r.RequestState != "REQUESTED" && r.RequestState != "ACCEPTED" {
			return false, obs, wait.Permanent(fmt.Errorf("request %s ended %s/%s", m.name, r.RequestState, kit.OrNone(r.ResultCode)))
		}
		return r.RequestState == state, obs, nil
	})
	if err != nil {
		sc.St.On("request.request_state").Assert("request_state of request "+m.name, state, kit.OrNone(last.RequestState), false)
		return err
	}
	if state == "ACCEPTED" {
		m.acceptedRev = kit.Atoi(last.Revision)
	}
	return sc.St.On("request.request_state").Equal("request_state of request "+m.name, state, last.RequestState)
}

// claimRenewed: while the child runs, the poller renews claim_heartbeat_at, and every
// renewal is a new revision of the record (DATETIME keeps the minute, so the value itself
// may not move).
func (requestDomain) claimRenewed(ctx context.Context, ref string) error {
	sc := kit.SceneOf(ctx)
	m, err := requestsOf(ctx).find(ref)
	if err != nil {
		return err
	}
	if m.acceptedRev == 0 {
		return fmt.Errorf("request %s was not seen ACCEPTED first (missing: … becomes \"ACCEPTED\")", m.name)
	}
	var last kit.OperationRequest
	err = wait.For(ctx, wait.RequestState, fmt.Sprintf("a claim heartbeat of request %s (revision above %d)", m.name, m.acceptedRev), func(ctx context.Context) (bool, string, error) {
		r, err := readRequest(ctx, m)
		if err != nil {
			return false, "", err
		}
		last = r
		obs := fmt.Sprintf("%s at revision %s", r.RequestState, r.Revision)
		if r.RequestState != "ACCEPTED" {
			return false, obs, wait.Permanent(fmt.Errorf("request %s left ACCEPTED (%s/%s) before a heartbeat was seen", m.name, r.RequestState, kit.OrNone(r.ResultCode)))
		}
		return kit.Atoi(r.Revision) > m.acceptedRev, obs, nil
	})
	seen := fmt.Sprintf("%s at revision %s", kit.OrNone(last.RequestState), kit.OrNone(last.Revision))
	return sc.St.On("request.$revision", "request.request_state").Assert("revision of request "+m.name+" while ACCEPTED", fmt.Sprintf("ACCEPTED above revision %d", m.acceptedRev), seen, err == nil)
}

// lastInvocationRequestedBy: the invocation the poller's child made carries the request's
// correlation, built here from what kintone recorded for the request (its $id and 作成者).
func (requestDomain) lastInvocationRequestedBy(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	m, err := requestsOf(ctx).find("the request")
	if err != nil {
		return err
	}
	r, err := readRequest(ctx, m)
	if err != nil {
		return err
	}
	if err := sc.St.On("request.作成者").Assert("creator code (作成者) of request "+m.name, "non-empty", kit.OrNone(r.Creator), r.Creator != ""); err != nil {
		return err
	}
	last, err := kit.TheLastInvocation(ctx)
	if err != nil {
		return err
	}
	want := "app-request:" + r.RecordID + ":" + kit.EncodeURIComponent(r.Creator)
	return sc.St.On("audit.RUN_INVOCATION.requested_by").Equal("requested_by of the last invocation", want, kit.OrNone(last.RequestedBy))
}

func (requestDomain) messageEndsWithInvocation(ctx context.Context, ref string) error {
	sc := kit.SceneOf(ctx)
	m, r, err := readNamedRequest(ctx, ref)
	if err != nil {
		return err
	}
	last, err := kit.TheLastInvocation(ctx)
	if err != nil {
		return err
	}
	want := "invocation_id=" + last.InvocationID
	return sc.St.On("request.result_message").Assert("result_message of request "+m.name, "ends with "+want, kit.OrNone(r.ResultMessage), strings.HasSuffix(r.ResultMessage, want))
}

// settledAsOneStart: two STARTs of one key handled by two pollers at once. Whoever ran first
// created the Run; the other either found it finished (NOOP_ALREADY_SUCCESS), unfinished
// (RUN_ALREADY_EXISTS) or its network locked (LOCK_CONFLICT) — never a second Run (that is
// the caller's "exactly one run" step).
func (requestDomain) settledAsOneStart(ctx context.Context, a, b string) error {
	sc := kit.SceneOf(ctx)
	rs := requestsOf(ctx)
	var got []string
	done, rejectedOK, noop, other := 0, 0, 0, 0
	for _, name := range []string{a, b} {
		m, err := rs.find(`request "` + name + `"`)
		if err != nil {
			return err
		}
		r, err := readRequest(ctx, m)
		if err != nil {
			return err
		}
		got = append(got, name+": "+r.RequestState+"/"+kit.OrNone(r.ResultCode))
		switch {
		case r.RequestState == "DONE" && r.ResultCode == "NOOP_ALREADY_SUCCESS":
			noop++
		case r.RequestState == "DONE":
			done++
		case r.RequestState == "REJECTED" && (r.ResultCode == "LOCK_CONFLICT" || r.ResultCode == "RUN_ALREADY_EXISTS"):
			rejectedOK++
		default:
			other++
		}
	}
	sort.Strings(got)
	ok := other == 0 && done == 1 && noop+rejectedOK == 1
	// Which of the alternatives held: `flowtest explore` counts the branches.
	sc.St.Note(schedule.BranchNote, strings.Join(proxy.BranchOf(got), " + "))
	return sc.St.On("request.request_state", "request.result_code").Assert("outcomes of the two STARTs of one key", "one DONE, the other DONE/NOOP_ALREADY_SUCCESS or REJECTED/LOCK_CONFLICT|RUN_ALREADY_EXISTS", strings.Join(got, "; "), ok)
}

func readRequestRecord(ctx context.Context, id string) ([]string, error) {
	recs, err := kit.ReadExact(ctx, kit.SceneOf(ctx), target.RoleRequest, kit.DecodeRequestFields, kit.FieldIs("$id", id))
	if err != nil {
		return nil, err
	}
	if len(recs) != 1 {
		return nil, fmt.Errorf("request record %s: %d records read", id, len(recs))
	}
	return recs[0], nil
}

func (requestDomain) requestRecorded(ctx context.Context) error {
	rs := requestsOf(ctx)
	m, err := rs.find("the request")
	if err != nil {
		return err
	}
	r, err := readRequestRecord(ctx, m.id)
	if err != nil {
		return err
	}
	rs.recorded, rs.recordID = r, m.id
	return nil
}

func (requestDomain) requestUnchanged(ctx context.Context) error {
	rs := requestsOf(ctx)
	if rs.recorded == nil {
		return fmt.Errorf("no request was recorded (missing: the request is recorded)")
	}
	now, err := readRequestRecord(ctx, rs.recordID)
	if err != nil {
		return err
	}
	was := map[string]bool{}
	for _, f := range rs.recorded {
		was[f] = true
	}
	var changed []string
	for _, f := range now {
		if !was[f] {
			changed = append(changed, f)
		}
	}
	return kit.SceneOf(ctx).St.On("request.reason", "request.request_type").Equal(fmt.Sprintf("fields of request record %s that differ from the recorded ones", rs.recordID), kit.OrNone(""), kit.OrNone(strings.Join(changed, ", ")))
}
