package flownet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// Status JSON (§1.4). Field order follows the contract; nullable values are pointers.
type statusDoc struct {
	NetworkID string       `json:"network_id"`
	Profile   string       `json:"profile"`
	Lock      *statusLock  `json:"lock"`
	Runs      []*statusRun `json:"runs"`
}

// statusLock never carries the lease token.
type statusLock struct {
	RecordID          string  `json:"record_id"`
	OwnerInvocationID string  `json:"owner_invocation_id"`
	OwnerInstanceID   *string `json:"owner_instance_id"`
	HeartbeatAt       *string `json:"heartbeat_at"`
	LeaseExpiresAt    *string `json:"lease_expires_at"`
	StaleCandidate    bool    `json:"stale_candidate"`
	Revision          int     `json:"revision"`
	// LeaseToken is set only by a planted defect: the lease token never leaves FlowNet.
	LeaseToken string `json:"lease_token,omitempty"`
}

type statusHold struct {
	State       string  `json:"state"`
	RequestedBy *string `json:"requested_by"`
	RequestedAt *string `json:"requested_at"`
}

type statusRun struct {
	RunID           string      `json:"run_id"`
	BusinessKey     string      `json:"business_key"`
	Status          string      `json:"status"`
	ResumeAllowed   bool        `json:"resume_allowed"`
	LifecycleStatus string      `json:"lifecycle_status"`
	CreatedAt       *string     `json:"created_at"`
	StartedAt       *string     `json:"started_at"`
	FinishedAt      *string     `json:"finished_at"`
	UpdatedAt       *string     `json:"updated_at"`
	Hold            *statusHold `json:"hold"`
	Activity        string      `json:"activity,omitempty"`

	Invocations         []statusInvocation   `json:"invocations,omitempty"`
	NodeStates          []statusNodeState    `json:"node_states,omitempty"`
	Reconciliation      *statusReconcile     `json:"reconciliation,omitempty"`
	RecoveryIdentifiers *recoveryIdentifiers `json:"recovery_identifiers,omitempty"`
}

type statusInvocation struct {
	InvocationID string `json:"invocation_id"`
	Mode         string `json:"mode"`
	Status       string `json:"status"`
	ResultCode   string `json:"result_code"`
}

type attemptSummaryJSON struct {
	NodeAttemptID string `json:"node_attempt_id"`
	AttemptNo     int    `json:"attempt_no"`
	Status        string `json:"status"`
	ResultCode    string `json:"result_code"`
}

type statusNodeState struct {
	NodeID          string              `json:"node_id"`
	Status          string              `json:"status"`
	StatusReason    *string             `json:"status_reason"`
	Idempotent      bool                `json:"idempotent"`
	LatestAttemptNo int                 `json:"latest_attempt_no"`
	ActiveAttemptID *string             `json:"active_attempt_id"`
	LatestAttempt   *attemptSummaryJSON `json:"latest_attempt"`
	ActiveAttempt   *attemptSummaryJSON `json:"active_attempt"`
}

type statusReconcile struct {
	Inconsistencies []inconsistency `json:"inconsistencies"`
}

type inconsistency struct {
	Code       string   `json:"code"`
	NodeID     string   `json:"node_id,omitempty"`
	Detail     string   `json:"detail"`
	AttemptIDs []string `json:"attempt_ids,omitempty"`
}

type runNodeRef struct {
	RunID  string `json:"run_id"`
	NodeID string `json:"node_id"`
}

type forceUnlockIDs struct {
	NetworkID                 string `json:"network_id"`
	Profile                   string `json:"profile"`
	ExpectedOwnerInvocationID string `json:"expected_owner_invocation_id"`
}

type recoveryIdentifiers struct {
	ResolveNode        []runNodeRef    `json:"resolve_node"`
	ForceUnlockNetwork *forceUnlockIDs `json:"force_unlock_network"`
	RunNetwork         struct {
		ResumeRun *string `json:"resume_run"`
	} `json:"run_network"`
}

type statusOptions struct {
	networkID, profile, runID, businessKey string
	json                                   bool
}

func parseStatusArgs(args []string) (statusOptions, []string) {
	var o statusOptions
	var problems []string
	seen := map[string]bool{}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		var dst *string
		switch a {
		case "--profile":
			dst = &o.profile
		case "--run-id":
			dst = &o.runID
		case "--business-key":
			dst = &o.businessKey
		case "--json":
			if seen[a] {
				problems = append(problems, a+" was specified more than once")
			}
			seen[a], o.json = true, true
			continue
		default:
			positional, problems = positionalOrUnknown(a, positional, problems)
			continue
		}
		if seen[a] {
			problems = append(problems, a+" was specified more than once")
		}
		seen[a] = true
		if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
			problems = append(problems, a+" requires a value")
			continue
		}
		i++
		*dst = args[i]
	}
	if len(positional) != 1 {
		problems = append(problems, "exactly one <network_id> is required")
	} else {
		o.networkID = positional[0]
	}
	if o.profile == "" {
		problems = append(problems, "--profile is required")
	}
	if seen["--run-id"] && seen["--business-key"] {
		problems = append(problems, "--run-id and --business-key cannot be combined")
	}
	return o, problems
}

// status is `status <network_id> --profile <p> [--run-id | --business-key] [--json]`.
// It only reads (no record revision changes) and never prints the lease token.
func (c *cli) status(args []string) int {
	o, problems := parseStatusArgs(args)
	if len(problems) > 0 {
		return c.argumentError("status", problems)
	}
	doc, err := c.buildStatus(context.Background(), o)
	if err != nil {
		return c.fail(err, "STATUS_FAILED")
	}
	if o.json {
		b, _ := marshalJS(doc, "  ")
		fmt.Fprintln(c.stdout, string(b))
	} else {
		c.printStatusText(doc)
	}
	return 0
}

// marshalJS encodes v as JavaScript's JSON.stringify does (indent "" is the compact form):
// '<', '>' and '&' are written as they are, not as \u escapes.
func marshalJS(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func optStr(s string) *string { return strp(s) }

// text is a text field as the product reads it (String(value ?? "")): never null, "" when
// empty.
func text(s string) *string { return &s }

// buildStatus reads what status prints: the network's lock, then its Runs (one with
// --run-id or --business-key, with their detail), each with its activity.
func (c *cli) buildStatus(ctx context.Context, o statusOptions) (*statusDoc, error) {
	st, err := c.newStore(false, 0)
	if err != nil {
		return nil, err
	}
	n1, err := N1Key(o.profile, o.networkID)
	if err != nil {
		return nil, &codedError{Code: "INVALID_ARGUMENT", Msg: err.Error(), Err: err}
	}
	now := c.now()
	doc := &statusDoc{NetworkID: o.networkID, Profile: o.profile, Runs: []*statusRun{}}
	lease, err := readStatusLock(ctx, st, n1, o, doc, now)
	if err != nil {
		return nil, err
	}
	mine, err := findStatusRuns(ctx, st, o)
	if err != nil {
		return nil, err
	}
	detail := o.runID != "" || o.businessKey != ""
	for _, r := range mine {
		sr, err := statusRunOf(ctx, st, r, doc, lease, now, detail)
		if err != nil {
			return nil, err
		}
		doc.Runs = append(doc.Runs, sr)
	}
	return doc, nil
}

// statusLease is the expiry of the network lock's lease; ok is false without a lock or
// with an unreadable expiry.
type statusLease struct {
	expires time.Time
	ok      bool
}

// readStatusLock reads the network's RUNNING lock into doc.Lock (none: nil).
func readStatusLock(ctx context.Context, st *store, n1 string, o statusOptions, doc *statusDoc, now time.Time) (statusLease, error) {
	var lease statusLease
	locks, err := st.find(ctx, st.stateApp, `record_type in ("NETWORK_LOCK") and lock_key in (`+q(n1)+`) and status in ("RUNNING")`)
	if err != nil {
		return lease, err
	}
	if len(locks) > 1 {
		return lease, coded(codeMultipleRecords, "%d RUNNING network locks for %s", len(locks), o.networkID)
	}
	if len(locks) == 1 {
		// The lock's text fields are printed as read ("" when empty, never null), as the
		// product's lock reader does.
		l := locks[0]
		instance, ok := strings.CutPrefix(l.Str("status_reason"), "owner_instance_id=")
		if !ok {
			instance = ""
		}
		doc.Lock = &statusLock{RecordID: l.ID(), OwnerInvocationID: l.Str("owner_invocation_id"),
			OwnerInstanceID: text(instance), HeartbeatAt: text(l.Str("heartbeat_at")),
			LeaseExpiresAt: text(l.Str("lease_expires_at")), Revision: atoi(l.Str("revision"))}
		if defect.StatusShowsLeaseToken {
			doc.Lock.LeaseToken = l.Str("lease_token") // planted defect
		}
		if lease.expires, lease.ok = parseTime(l.Str("lease_expires_at")); lease.ok {
			doc.Lock.StaleCandidate = now.After(lease.expires.Add(kintoneDatetimeAllowance * time.Second))
		}
	}
	return lease, nil
}

// findStatusRuns reads the Runs status shows, of this network and profile, by run_id: the
// one asked for, or every one.
func findStatusRuns(ctx context.Context, st *store, o statusOptions) ([]kintoneapi.Record, error) {
	var runs []kintoneapi.Record
	var err error
	detail := o.runID != "" || o.businessKey != ""
	switch {
	case o.runID != "":
		runs, err = st.findExact(ctx, st.stateApp, `record_type in ("NETWORK_RUN") and run_id in (`+q(o.runID)+`)`, "run_id", o.runID)
	case o.businessKey != "":
		r1, kerr := R1Key(o.profile, o.networkID, o.businessKey)
		if kerr != nil {
			return nil, &codedError{Code: "INVALID_ARGUMENT", Msg: kerr.Error(), Err: kerr}
		}
		runs, err = st.find(ctx, st.stateApp, "record_key in ("+q(r1)+")")
	default:
		runs, err = st.findExact(ctx, st.stateApp, `record_type in ("NETWORK_RUN") and network_id in (`+q(o.networkID)+`)`, "network_id", o.networkID)
	}
	if err != nil {
		return nil, err
	}
	var mine []kintoneapi.Record
	for _, r := range runs {
		if r.Str("network_id") == o.networkID && runProfile(r) == o.profile {
			mine = append(mine, r)
		}
	}
	if detail && len(mine) == 0 {
		what := "run_id " + o.runID
		if o.runID == "" {
			what = "business key " + o.businessKey
		}
		return nil, coded(codeRecordNotFound, "no Run with %s in network %s (profile %s)", what, o.networkID, o.profile)
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].Str("run_id") < mine[j].Str("run_id") })
	return mine, nil
}

// statusRunOf is one Run as status shows it: its fields, hold and activity, and with detail
// its Node States and recovery identifiers.
func statusRunOf(ctx context.Context, st *store, r kintoneapi.Record, doc *statusDoc, lease statusLease, now time.Time, detail bool) (*statusRun, error) {
	sr := &statusRun{RunID: r.Str("run_id"), BusinessKey: r.Str("business_key"), Status: r.Str("status"),
		ResumeAllowed: r.Str("resume_allowed") == "true", LifecycleStatus: r.Str("lifecycle_status"),
		CreatedAt: text(r.Str("created_at")), StartedAt: optStr(r.Str("started_at")),
		FinishedAt: optStr(r.Str("finished_at")), UpdatedAt: text(r.Str("updated_at"))}
	// Both modes read the Run's Invocations: the lock's owner among them (and its lease,
	// with the DATETIME allowance, not run out) is what makes the Run LIVE.
	invs, err := st.findExact(ctx, st.auditApp, `record_type in ("RUN_INVOCATION") and run_id in (`+q(sr.RunID)+`)`, "run_id", sr.RunID)
	if err != nil {
		return nil, err
	}
	hold, err := readHold(ctx, st, sr.RunID)
	if err != nil {
		return nil, err
	}
	sr.Hold = hold
	if !IsTerminalRun(sr.Status) {
		owned := false
		for _, inv := range invs {
			owned = owned || doc.Lock != nil && inv.Str("invocation_id") == doc.Lock.OwnerInvocationID
		}
		leaseLive := lease.ok && !now.After(lease.expires.Add(kintoneDatetimeAllowance*time.Second))
		switch {
		case hold != nil:
			sr.Activity = "STOPPED"
		case owned && (leaseLive || defect.ActivityIgnoresLeaseExpiry): // the defect: a stale lock still counts as live
			sr.Activity = "LIVE"
		case sr.StartedAt == nil:
			sr.Activity = "IDLE"
		default:
			sr.Activity = "INTERRUPTED"
		}
	}
	if defect.StatusBumpsRevision { // planted defect: status "repairs" updated_at, a write that bumps $revision
		_, _ = st.update(ctx, st.stateApp, r.Str("record_key"), vals(map[string]any{"updated_at": r.Str("updated_at")}), r.Revision())
	}
	if detail {
		if err := fillDetail(ctx, st, sr, r, invs, doc); err != nil {
			return nil, err
		}
	}
	return sr, nil
}

func readHold(ctx context.Context, st *store, runID string) (*statusHold, error) {
	rec, err := st.byKey(ctx, st.stateApp, "CANCEL:"+runID)
	if err != nil || rec == nil {
		return nil, err
	}
	var h map[string]any
	_ = json.Unmarshal([]byte(rec.Str("status_reason")), &h)
	state, _ := h["state"].(string)
	if state != "REQUESTED" && state != "ACCEPTED" {
		return nil, nil
	}
	by, _ := h["requested_by"].(string)
	at, _ := h["requested_at"].(string)
	return &statusHold{State: state, RequestedBy: optStr(by), RequestedAt: optStr(at)}, nil
}

// fillDetail adds the detail keys of one Run. Its Node States and Attempts are read as the
// product reads them, with a query that has no `order by` (kintone's default order, $id
// descending, and its default limit of 100); they are listed in that order.
func fillDetail(ctx context.Context, st *store, sr *statusRun, run kintoneapi.Record, invs []kintoneapi.Record, doc *statusDoc) error {
	sr.Invocations = []statusInvocation{}
	for _, r := range invs { // findAll returns ascending $id
		sr.Invocations = append(sr.Invocations, statusInvocation{r.Str("invocation_id"), r.Str("mode"), r.Str("status"), r.Str("result_code")})
	}
	states, err := st.find(ctx, st.stateApp, `record_type in ("NODE_STATE") and run_id in (`+q(sr.RunID)+`)`)
	if err != nil {
		return err
	}
	states = kintoneapi.Where(states, "run_id", sr.RunID)
	atts, err := st.find(ctx, st.auditApp, `record_type in ("NODE_ATTEMPT") and run_id in (`+q(sr.RunID)+`)`)
	if err != nil {
		return err
	}
	atts = kintoneapi.Where(atts, "run_id", sr.RunID)
	// The Attempt Resolutions of the Run's Attempts (the product reads every resolution, then
	// keeps those of this Run's Attempts).
	resolutions, err := st.find(ctx, st.auditApp, `record_type in ("ATTEMPT_RESOLUTION")`)
	if err != nil {
		return err
	}
	byID := map[string]kintoneapi.Record{}
	byNodeNo := map[string]kintoneapi.Record{}
	for _, a := range atts {
		byID[a.Str("node_attempt_id")] = a
		byNodeNo[a.Str("node_id")+"\x00"+a.Str("attempt_no")] = a
	}
	summary := func(a kintoneapi.Record) *attemptSummaryJSON {
		if a == nil {
			return nil
		}
		return &attemptSummaryJSON{a.Str("node_attempt_id"), atoi(a.Str("attempt_no")), a.Str("status"), a.Str("result_code")}
	}
	rec := &recoveryIdentifiers{ResolveNode: []runNodeRef{}}
	sr.NodeStates = []statusNodeState{}
	for _, s := range states {
		node := s.Str("node_id")
		activeID := s.Str("active_attempt_id")
		var active, latest kintoneapi.Record
		if activeID != "" {
			active = byID[activeID]
		}
		// The latest attempt is the one whose number the Node State names.
		if no := atoi(s.Str("latest_attempt_no")); no != 0 {
			latest = byNodeNo[node+"\x00"+strconv.Itoa(no)]
		}
		ns := statusNodeState{NodeID: node, Status: s.Str("status"), StatusReason: optStr(s.Str("status_reason")),
			Idempotent: s.Str("idempotent") == "true", LatestAttemptNo: atoi(s.Str("latest_attempt_no")),
			ActiveAttemptID: optStr(activeID), LatestAttempt: summary(latest), ActiveAttempt: summary(active)}
		sr.NodeStates = append(sr.NodeStates, ns)
		if ns.Status == StatusUnknown || (ns.Status == StatusFailed && !ns.Idempotent) {
			rec.ResolveNode = append(rec.ResolveNode, runNodeRef{sr.RunID, node})
		}
	}
	sr.Reconciliation = &statusReconcile{Inconsistencies: detectInconsistencies(run, states, atts, resolutions)}
	if doc.Lock != nil {
		rec.ForceUnlockNetwork = &forceUnlockIDs{NetworkID: doc.NetworkID, Profile: doc.Profile, ExpectedOwnerInvocationID: doc.Lock.OwnerInvocationID}
	}
	// The product names the Run's own id here whatever its status: a resume of a SUCCESS Run
	// is a NO-OP, of an ARCHIVED one a refusal, both of which run-network explains.
	rec.RunNetwork.ResumeRun = optStr(sr.RunID)
	sr.RecoveryIdentifiers = rec
	return nil
}

// terminalAttempt and terminalState are the statuses detectInconsistencies treats as final.
var (
	terminalAttempt = map[string]bool{StatusSuccess: true, StatusFailed: true, StatusCancelled: true, StatusUnknown: true}
	terminalState   = map[string]bool{StatusSuccess: true, StatusFailed: true, StatusBlocked: true, StatusSkipped: true, StatusCancelled: true, StatusUnknown: true}
)

// detectInconsistencies is the read-only inspection of a Run's records that status reports
// (the checks a resume's reconciliation repairs or refuses on, none of them repaired here), in
// the product's order: Attempts without a Node State; per Node State (in the order read) its
// RUNNING attempts, business vs kintone revision, each Attempt's state_revision_before, then
// its active attempt; then the Attempt Resolutions; then the Run's aggregate.
func detectInconsistencies(run kintoneapi.Record, states, atts, resolutions []kintoneapi.Record) []inconsistency {
	in := newRunInspection(states, atts)
	in.attemptsWithoutState()
	for _, s := range states {
		in.checkNodeState(s)
	}
	in.checkResolutions(atts, resolutions)
	in.checkAggregate(run, states)
	return in.incs
}

// runInspection is the state of detectInconsistencies: the records indexed by node, what was
// found so far, and the nodes whose records are too broken to judge further (unsafe).
type runInspection struct {
	incs      []inconsistency
	nodeOrder []string
	byNode    map[string][]kintoneapi.Record
	stateOf   map[string]kintoneapi.Record
	unsafe    map[string]bool
}

func newRunInspection(states, atts []kintoneapi.Record) *runInspection {
	in := &runInspection{incs: []inconsistency{}, byNode: map[string][]kintoneapi.Record{},
		stateOf: map[string]kintoneapi.Record{}, unsafe: map[string]bool{}}
	for _, a := range atts {
		n := a.Str("node_id")
		if _, ok := in.byNode[n]; !ok {
			in.nodeOrder = append(in.nodeOrder, n)
		}
		in.byNode[n] = append(in.byNode[n], a)
	}
	for _, s := range states {
		in.stateOf[s.Str("node_id")] = s
	}
	return in
}

// attemptIDs are the node_attempt_ids of rs, in order.
func attemptIDs(rs []kintoneapi.Record) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Str("node_attempt_id"))
	}
	return out
}

func (in *runInspection) add(i inconsistency) { in.incs = append(in.incs, i) }

// attemptsWithoutState finds the nodes that have Attempts but no Node State.
func (in *runInspection) attemptsWithoutState() {
	for _, n := range in.nodeOrder {
		if _, ok := in.stateOf[n]; !ok {
			in.add(inconsistency{Code: "ATTEMPT_NODE_STATE_MISSING", NodeID: n,
				Detail: "Node Attempts exist without a corresponding Node State", AttemptIDs: attemptIDs(in.byNode[n])})
			in.unsafe[n] = true
		}
	}
}

// checkNodeState checks one Node State against its Attempts: their RUNNING count and
// revisions, then its active attempt.
func (in *runInspection) checkNodeState(s kintoneapi.Record) {
	n := s.Str("node_id")
	rev := atoi(s.Str("revision"))
	var running []kintoneapi.Record
	for _, a := range in.byNode[n] {
		if a.Str("status") == StatusRunning {
			running = append(running, a)
		}
	}
	if len(running) > 1 {
		in.add(inconsistency{Code: "MULTIPLE_RUNNING_ATTEMPTS", NodeID: n,
			Detail: "one node has multiple RUNNING attempts", AttemptIDs: attemptIDs(running)})
		in.unsafe[n] = true
	}
	if rev != atoi(s.Revision()) {
		in.add(inconsistency{Code: "REVISION_SERIES_INVERTED", NodeID: n,
			Detail: fmt.Sprintf("business revision %d differs from storage revision %d", rev, atoi(s.Revision()))})
		in.unsafe[n] = true
	}
	for _, a := range in.byNode[n] {
		id := a.Str("node_attempt_id")
		before := strings.TrimSpace(a.Str("state_revision_before"))
		switch {
		case before == "":
			in.add(inconsistency{Code: "REVISION_SERIES_UNDETERMINED", NodeID: n,
				Detail: "Attempt " + id + " has no state_revision_before", AttemptIDs: []string{id}})
			in.unsafe[n] = true
		case atoi(before) >= rev:
			code := "REVISION_SERIES_UNDETERMINED"
			if atoi(before) > rev {
				code = "REVISION_SERIES_INVERTED"
			}
			in.add(inconsistency{Code: code, NodeID: n,
				Detail:     fmt.Sprintf("Attempt %s state_revision_before %d is not older than State revision %d", id, atoi(before), rev),
				AttemptIDs: []string{id}})
			in.unsafe[n] = true
		}
	}
	in.checkActiveAttempt(s)
}

// checkActiveAttempt checks a Node State's active_attempt_id: present when RUNNING, naming
// exactly one Attempt, and (on a node still safe to judge) agreeing with its status.
func (in *runInspection) checkActiveAttempt(s kintoneapi.Record) {
	n, status := s.Str("node_id"), s.Str("status")
	activeID := s.Str("active_attempt_id")
	if status == StatusRunning && activeID == "" {
		in.add(inconsistency{Code: "ACTIVE_ATTEMPT_ID_MISSING", NodeID: n, Detail: "RUNNING Node State has no active_attempt_id"})
		in.unsafe[n] = true
		return
	}
	if activeID == "" {
		return
	}
	var active []kintoneapi.Record
	for _, a := range in.byNode[n] {
		if a.Str("node_attempt_id") == activeID {
			active = append(active, a)
		}
	}
	if len(active) != 1 {
		in.add(inconsistency{Code: "ACTIVE_ATTEMPT_NOT_FOUND", NodeID: n,
			Detail: fmt.Sprintf("active attempt cardinality is %d", len(active)), AttemptIDs: []string{activeID}})
		in.unsafe[n] = true
		return
	}
	if in.unsafe[n] {
		return
	}
	as := active[0].Str("status")
	switch {
	case terminalAttempt[as] && (as == status || status == StatusRunning):
		in.add(inconsistency{Code: "TERMINAL_ATTEMPT_PENDING_APPLY", NodeID: n,
			Detail: "terminal active Attempt has not been applied to Node State", AttemptIDs: []string{activeID}})
	case terminalState[status] && as == StatusRunning:
		in.add(inconsistency{Code: "STATE_TERMINAL_ATTEMPT_RUNNING", NodeID: n,
			Detail: "Node State is terminal while its active Attempt is RUNNING", AttemptIDs: []string{activeID}})
	case as != status:
		in.add(inconsistency{Code: "STATE_ATTEMPT_STATUS_MISMATCH", NodeID: n,
			Detail: fmt.Sprintf("State %s and Attempt %s do not match", status, as), AttemptIDs: []string{activeID}})
	}
}

// checkResolutions checks the Attempt Resolutions of this Run's Attempts, per Attempt in the
// order first read: one outcome, an UNKNOWN or FAILED Attempt, the node's current attempt,
// and applied to its Node State.
func (in *runInspection) checkResolutions(atts, resolutions []kintoneapi.Record) {
	attemptByID := map[string]kintoneapi.Record{}
	for _, a := range atts {
		attemptByID[a.Str("node_attempt_id")] = a
	}
	var resOrder []string
	resByAttempt := map[string][]kintoneapi.Record{}
	for _, r := range resolutions {
		id := r.Str("attempt_id")
		if _, mine := attemptByID[id]; !mine {
			continue
		}
		if _, ok := resByAttempt[id]; !ok {
			resOrder = append(resOrder, id)
		}
		resByAttempt[id] = append(resByAttempt[id], r)
	}
	for _, id := range resOrder {
		a := attemptByID[id]
		n := a.Str("node_id")
		outcomes := map[string]bool{}
		for _, r := range resByAttempt[id] {
			outcomes[r.Str("resolved_outcome")] = true
		}
		if len(outcomes) > 1 {
			in.add(inconsistency{Code: "CONFLICTING_ATTEMPT_RESOLUTIONS", NodeID: n,
				Detail: "Attempt " + id + " has conflicting Resolution outcomes", AttemptIDs: []string{id}})
			continue
		}
		if as := a.Str("status"); as != StatusUnknown && as != StatusFailed {
			in.add(inconsistency{Code: "RESOLUTION_ATTEMPT_NOT_UNKNOWN", NodeID: n,
				Detail: "Resolution targets " + as + " Attempt " + id, AttemptIDs: []string{id}})
			continue
		}
		s, ok := in.stateOf[n]
		if !ok {
			continue
		}
		if atoi(a.Str("attempt_no")) != atoi(s.Str("latest_attempt_no")) || in.unsafe[n] {
			in.add(inconsistency{Code: "RESOLUTION_NOT_CURRENT_ATTEMPT", NodeID: n,
				Detail: "Resolution attempt " + id + " is not the uniquely current State attempt", AttemptIDs: []string{id}})
			continue
		}
		outcome, status := resByAttempt[id][0].Str("resolved_outcome"), s.Str("status")
		if status == outcome {
			continue
		}
		if status == StatusUnknown || status == StatusFailed && a.Str("status") == StatusFailed && s.Str("idempotent") != "true" {
			in.add(inconsistency{Code: "ATTEMPT_RESOLUTION_PENDING_APPLY", NodeID: n,
				Detail: "Resolution for Attempt " + id + " has not been applied to Node State", AttemptIDs: []string{id}})
		} else {
			in.add(inconsistency{Code: "RESOLUTION_STATE_NOT_UNKNOWN", NodeID: n,
				Detail: "Resolution cannot be applied to State " + status, AttemptIDs: []string{id}})
		}
	}
}

// checkAggregate compares the Run's status with the one its Node States aggregate to.
func (in *runInspection) checkAggregate(run kintoneapi.Record, states []kintoneapi.Record) {
	statuses := make([]string, 0, len(states))
	for _, s := range states {
		statuses = append(statuses, s.Str("status"))
	}
	if agg := Aggregate(statuses, run.Str("started_at") != ""); agg != run.Str("status") {
		in.add(inconsistency{Code: "RUN_AGGREGATE_MISMATCH",
			Detail: fmt.Sprintf("Run status %s differs from computed %s", run.Str("status"), agg)})
	}
}

// printStatusText prints the status as the product's text form does: the lock's keys one a
// line, then per Run "- run_id: …" and every other key of the Run in the JSON's order, a
// scalar as JavaScript's String() writes it (null as "null") and an object or array as compact
// JSON.
func (c *cli) printStatusText(doc *statusDoc) {
	w := c.stdout
	fmt.Fprintf(w, "Network: %s\nProfile: %s\n", doc.NetworkID, doc.Profile)
	if doc.Lock == nil {
		fmt.Fprintln(w, "Lock: none")
	} else {
		fmt.Fprintln(w, "Lock:")
		printTextEntries(w, doc.Lock, "")
	}
	fmt.Fprintf(w, "Runs: %d\n", len(doc.Runs))
	for _, r := range doc.Runs {
		fmt.Fprintf(w, "- run_id: %s\n", r.RunID)
		printTextEntries(w, r, "run_id")
	}
}

// printTextEntries writes "  key: value" for each key of v's JSON object in order, skipping
// skip.
func printTextEntries(w io.Writer, v any, skip string) {
	b, _ := marshalJS(v, "")
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return
		}
		key, _ := kt.(string)
		if key == skip {
			continue
		}
		fmt.Fprintf(w, "  %s: %s\n", key, jsString(raw))
	}
}

// jsString is String(value) of a JSON value as JavaScript writes it in the text form: a
// string as itself, null, booleans and numbers as their JSON text, an object or array as its
// compact JSON.
func jsString(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func deref(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}
