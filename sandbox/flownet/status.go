package flownet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/kintoneapi"
	"github.com/ksqlflow/flowtest/sandbox/defect"
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
		b, _ := json.MarshalIndent(doc, "", "  ")
		fmt.Fprintln(c.stdout, string(b))
	} else {
		c.printStatusText(doc)
	}
	return 0
}

func optStr(s string) *string { return strp(s) }

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

	locks, err := st.find(ctx, st.stateApp, `record_type in ("NETWORK_LOCK") and lock_key in (`+q(n1)+`) and status in ("RUNNING")`)
	if err != nil {
		return nil, err
	}
	if len(locks) > 1 {
		return nil, coded(codeMultipleRecords, "%d RUNNING network locks for %s", len(locks), o.networkID)
	}
	var lockOwnerRun string
	if len(locks) == 1 {
		l := locks[0]
		doc.Lock = &statusLock{RecordID: l.ID(), OwnerInvocationID: l.Str("owner_invocation_id"),
			HeartbeatAt: optStr(l.Str("heartbeat_at")), LeaseExpiresAt: optStr(l.Str("lease_expires_at")),
			Revision: atoi(l.Str("revision"))}
		if defect.StatusShowsLeaseToken {
			doc.Lock.LeaseToken = l.Str("lease_token") // planted defect
		}
		if v, ok := strings.CutPrefix(l.Str("status_reason"), "owner_instance_id="); ok {
			doc.Lock.OwnerInstanceID = optStr(v)
		}
		if exp, ok := parseTime(l.Str("lease_expires_at")); ok {
			doc.Lock.StaleCandidate = now.After(exp.Add(kintoneDatetimeAllowance * time.Second))
		}
		if owner := l.Str("owner_invocation_id"); owner != "" {
			inv, err := st.byKey(ctx, st.auditApp, "INV:"+owner)
			if err != nil {
				return nil, err
			}
			if inv != nil {
				lockOwnerRun = inv.Str("run_id")
			}
		}
	}
	liveLock := doc.Lock != nil && !doc.Lock.StaleCandidate

	var runs []kintoneapi.Record
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
	for _, r := range mine {
		sr := &statusRun{RunID: r.Str("run_id"), BusinessKey: r.Str("business_key"), Status: r.Str("status"),
			ResumeAllowed: r.Str("resume_allowed") == "true", LifecycleStatus: r.Str("lifecycle_status"),
			CreatedAt: optStr(r.Str("created_at")), StartedAt: optStr(r.Str("started_at")),
			FinishedAt: optStr(r.Str("finished_at")), UpdatedAt: optStr(r.Str("updated_at"))}
		hold, err := readHold(ctx, st, sr.RunID)
		if err != nil {
			return nil, err
		}
		sr.Hold = hold
		if !IsTerminalRun(sr.Status) {
			switch {
			case hold != nil:
				sr.Activity = "STOPPED"
			case (liveLock || defect.ActivityIgnoresLeaseExpiry && doc.Lock != nil) && lockOwnerRun == sr.RunID: // the defect: a stale lock still counts as live
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
			if err := fillDetail(ctx, st, sr, r, doc); err != nil {
				return nil, err
			}
		}
		doc.Runs = append(doc.Runs, sr)
	}
	return doc, nil
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

func fillDetail(ctx context.Context, st *store, sr *statusRun, run kintoneapi.Record, doc *statusDoc) error {
	invs, err := st.findExact(ctx, st.auditApp, `record_type in ("RUN_INVOCATION") and run_id in (`+q(sr.RunID)+`)`, "run_id", sr.RunID)
	if err != nil {
		return err
	}
	sr.Invocations = []statusInvocation{}
	for _, r := range invs { // findAll returns ascending $id
		sr.Invocations = append(sr.Invocations, statusInvocation{r.Str("invocation_id"), r.Str("mode"), r.Str("status"), r.Str("result_code")})
	}
	atts, err := st.findExact(ctx, st.auditApp, `record_type in ("NODE_ATTEMPT") and run_id in (`+q(sr.RunID)+`)`, "run_id", sr.RunID)
	if err != nil {
		return err
	}
	byNode := map[string][]kintoneapi.Record{}
	byID := map[string]kintoneapi.Record{}
	for _, a := range atts {
		byNode[a.Str("node_id")] = append(byNode[a.Str("node_id")], a)
		byID[a.Str("node_attempt_id")] = a
	}
	states, err := st.findExact(ctx, st.stateApp, `record_type in ("NODE_STATE") and run_id in (`+q(sr.RunID)+`)`, "run_id", sr.RunID)
	if err != nil {
		return err
	}
	summary := func(a kintoneapi.Record) *attemptSummaryJSON {
		if a == nil {
			return nil
		}
		return &attemptSummaryJSON{a.Str("node_attempt_id"), atoi(a.Str("attempt_no")), a.Str("status"), a.Str("result_code")}
	}
	rec := &recoveryIdentifiers{ResolveNode: []runNodeRef{}}
	incs := []inconsistency{}
	sr.NodeStates = []statusNodeState{}
	for _, s := range states {
		node := s.Str("node_id")
		var latest kintoneapi.Record
		running := []string{}
		for _, a := range byNode[node] {
			if latest == nil || atoi(a.Str("attempt_no")) > atoi(latest.Str("attempt_no")) {
				latest = a
			}
			if a.Str("status") == StatusRunning {
				running = append(running, a.Str("node_attempt_id"))
			}
		}
		activeID := s.Str("active_attempt_id")
		active := byID[activeID]
		ns := statusNodeState{NodeID: node, Status: s.Str("status"), StatusReason: optStr(s.Str("status_reason")),
			Idempotent: s.Str("idempotent") == "true", LatestAttemptNo: atoi(s.Str("latest_attempt_no")),
			ActiveAttemptID: optStr(activeID), LatestAttempt: summary(latest), ActiveAttempt: summary(active)}
		sr.NodeStates = append(sr.NodeStates, ns)
		if ns.Status == StatusUnknown || (ns.Status == StatusFailed && !ns.Idempotent) {
			rec.ResolveNode = append(rec.ResolveNode, runNodeRef{sr.RunID, node})
		}
		switch {
		case ns.Status == StatusRunning && activeID == "":
			incs = append(incs, inconsistency{Code: "ACTIVE_ATTEMPT_ID_MISSING", NodeID: node, Detail: "RUNNING Node State has no active_attempt_id"})
		case activeID != "" && active == nil:
			incs = append(incs, inconsistency{Code: "ACTIVE_ATTEMPT_NOT_FOUND", NodeID: node, Detail: "active attempt " + activeID + " does not exist", AttemptIDs: []string{activeID}})
		case active != nil && ns.Status != StatusRunning && active.Str("status") == StatusRunning:
			incs = append(incs, inconsistency{Code: "STATE_TERMINAL_ATTEMPT_RUNNING", NodeID: node, Detail: "Node State is " + ns.Status + " but its active attempt is RUNNING", AttemptIDs: []string{activeID}})
		case active != nil && ns.Status != StatusRunning && ns.Status != StatusWaiting && active.Str("status") != ns.Status:
			incs = append(incs, inconsistency{Code: "STATE_ATTEMPT_STATUS_MISMATCH", NodeID: node, Detail: "Node State " + ns.Status + " vs active attempt " + active.Str("status"), AttemptIDs: []string{activeID}})
		}
		if len(running) > 1 {
			incs = append(incs, inconsistency{Code: "MULTIPLE_RUNNING_ATTEMPTS", NodeID: node, Detail: fmt.Sprintf("%d attempts are RUNNING", len(running)), AttemptIDs: running})
		}
		if atoi(s.Str("revision")) != atoi(s.Revision()) {
			incs = append(incs, inconsistency{Code: "REVISION_SERIES_INVERTED", NodeID: node, Detail: fmt.Sprintf("business revision %s differs from kintone $revision %s", s.Str("revision"), s.Revision())})
		}
	}
	sort.Slice(sr.NodeStates, func(i, j int) bool { return sr.NodeStates[i].NodeID < sr.NodeStates[j].NodeID })
	sr.Reconciliation = &statusReconcile{Inconsistencies: incs}
	if doc.Lock != nil {
		rec.ForceUnlockNetwork = &forceUnlockIDs{NetworkID: doc.NetworkID, Profile: doc.Profile, ExpectedOwnerInvocationID: doc.Lock.OwnerInvocationID}
	}
	if sr.ResumeAllowed && sr.LifecycleStatus != "ARCHIVED" && sr.Status != StatusSuccess {
		rec.RunNetwork.ResumeRun = optStr(sr.RunID)
	}
	sr.RecoveryIdentifiers = rec
	return nil
}

func deref(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}

func (c *cli) printStatusText(doc *statusDoc) {
	w := c.stdout
	fmt.Fprintf(w, "Network: %s\n", doc.NetworkID)
	fmt.Fprintf(w, "Profile: %s\n", doc.Profile)
	if doc.Lock == nil {
		fmt.Fprintln(w, "Lock: none")
	} else {
		l := doc.Lock
		fmt.Fprintln(w, "Lock:")
		fmt.Fprintf(w, "  owner_invocation_id: %s\n  owner_instance_id: %s\n  heartbeat_at: %s\n  lease_expires_at: %s\n  stale_candidate: %t\n  revision: %d\n",
			l.OwnerInvocationID, deref(l.OwnerInstanceID), deref(l.HeartbeatAt), deref(l.LeaseExpiresAt), l.StaleCandidate, l.Revision)
	}
	fmt.Fprintf(w, "Runs: %d\n", len(doc.Runs))
	for _, r := range doc.Runs {
		fmt.Fprintf(w, "- run_id: %s\n  business_key: %s\n  status: %s\n  lifecycle_status: %s\n  resume_allowed: %t\n",
			r.RunID, r.BusinessKey, r.Status, r.LifecycleStatus, r.ResumeAllowed)
		fmt.Fprintf(w, "  created_at: %s\n  started_at: %s\n  finished_at: %s\n", deref(r.CreatedAt), deref(r.StartedAt), deref(r.FinishedAt))
		if r.Hold != nil {
			fmt.Fprintf(w, "  hold: %s (requested_by %s)\n", r.Hold.State, deref(r.Hold.RequestedBy))
		} else {
			fmt.Fprintln(w, "  hold: none")
		}
		if r.Activity != "" {
			fmt.Fprintf(w, "  activity: %s\n", r.Activity)
		}
		for _, inv := range r.Invocations {
			fmt.Fprintf(w, "  invocation: %s mode=%s status=%s result_code=%s\n", inv.InvocationID, inv.Mode, inv.Status, inv.ResultCode)
		}
		for _, ns := range r.NodeStates {
			fmt.Fprintf(w, "  node: %s status=%s reason=%s attempts=%d\n", ns.NodeID, ns.Status, deref(ns.StatusReason), ns.LatestAttemptNo)
		}
		if ri := r.RecoveryIdentifiers; ri != nil {
			for _, rn := range ri.ResolveNode {
				fmt.Fprintf(w, "  resolve_node: --run-id %s --node-id %s\n", rn.RunID, rn.NodeID)
			}
			if ri.ForceUnlockNetwork != nil {
				fmt.Fprintf(w, "  force_unlock_network: %s --profile %s --expected-owner-invocation-id %s\n",
					ri.ForceUnlockNetwork.NetworkID, ri.ForceUnlockNetwork.Profile, ri.ForceUnlockNetwork.ExpectedOwnerInvocationID)
			}
			if ri.RunNetwork.ResumeRun != nil {
				fmt.Fprintf(w, "  run_network: --resume-run %s\n", *ri.RunNetwork.ResumeRun)
			}
		}
	}
}
