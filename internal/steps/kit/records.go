package kit

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/wait"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// RecordDomain: the run graph FlowNet persisted — NETWORK_RUN and NODE_STATE in the state
// app, NODE_ATTEMPT and RUN_INVOCATION in the audit app. Read-only tokens only.
type RecordDomain struct{}

func (d RecordDomain) register(reg stepdef.Registry) {
	reg.Step(`^exactly one run exists for the business key$`, d.exactlyOneRun)
	reg.Step(`^exactly one run exists for the business key "([^"]+)", of this network$`, d.exactlyOneRunForKey)
	reg.Step(`^the run is "([^"]+)"$`, d.theRunIs)
	reg.Step(`^the run becomes "([^"]+)"$`, d.theRunBecomes)
	reg.Step(`^the node states are:$`, d.theNodeStatesAre)
	reg.Step(`^every node has exactly 1 attempt and it is "([^"]+)"$`, d.everyNodeHasOneAttempt)
	reg.Step(`^the run has (\d+) invocations? and the last one is "([^"]+)"$`, d.invocationsAndLast)
	reg.Step(`^the last invocation is "([^"]+)"$`, d.lastInvocationIs)
	reg.Step(`^the last invocation is "([^"]+)" with result code "([^"]+)"$`, d.lastInvocationWithCode)
	reg.Step(`^the last invocation has mode "([^"]+)"$`, d.lastInvocationHasMode)
	reg.Step(`^the latest attempt of node "([^"]+)" is "([^"]+)" with result code "([^"]+)"$`, d.latestAttemptIs)
	reg.Step(`^the latest attempt of node "([^"]+)" is "([^"]+)" with result code "([^"]+)" and a start marker$`, d.latestAttemptWithMarker)
	reg.Step(`^the latest attempt of node "([^"]+)" is "([^"]+)" with whatever result code kSQL-Flow gave$`, d.latestAttemptAnyCode)
	reg.Step(`^node "([^"]+)" has attempts numbered "([^"]+)", all "([^"]+)"$`, d.attemptsNumbered)
	reg.Step(`^node "([^"]+)" has attempts numbered "([^"]+)", all "([^"]+)" with result code "([^"]+)"$`, d.attemptsNumberedWithCode)
	reg.Step(`^node "([^"]+)" has no attempt$`, d.hasNoAttempt)
	reg.Step(`^the run has (\d+) invocations and exactly one with mode "([^"]+)" preserving "([^"]+)"$`, d.invocationWithMode)
	reg.Step(`^the run has (\d+) invocations with distinct non-empty invocation ids$`, d.distinctInvocationIDs)
	reg.Step(`^at least one node has a "([^"]+)" attempt$`, d.someNodeHasAttempt)
	reg.Step(`^the attempts were created in the order "([^"]+)", with increasing record ids$`, d.attemptsCreatedInOrder)
	reg.Step(`^no node that had a "([^"]+)" attempt before `+ProcRef+` gained an attempt$`, d.noNodeGainedAttempt)
	reg.Step(`^the attempt times FlowNet recorded for consecutive nodes are in order to the minute, within the minutes `+ProcRef+` ran$`, d.attemptTimesInOrder)
}

// recordState keeps what one step saw for a later one.
type recordState struct {
	// attemptsBefore are every node's attempts, by fixture node, taken before a FlowNet
	// call started (by its name).
	attemptsBefore map[string]map[string][]NodeAttempt
	// pinned is, by network id, the run a step settled on by its business key (a key no
	// FlowNet call of the scenario named: a START's derived key, the cron path's); until the
	// next such step it is "the run" of that network.
	pinned map[string]string
}

var recordKey = scenario.NewKey[recordState]("records")

// ---- reads ----

// runsForBusinessKey reads the NETWORK_RUN records of the scope's business key (exactly) in
// the current network.
func runsForBusinessKey(ctx context.Context) ([]NetworkRun, error) {
	n, err := FixturesOf(ctx).Rendered()
	if err != nil {
		return nil, err
	}
	return RunsOfNetwork(ctx, n.NetworkID)
}

// RunsOfNetwork reads the NETWORK_RUN records of the scope's business key in a network.
func RunsOfNetwork(ctx context.Context, networkID string) ([]NetworkRun, error) {
	return ReadExact(ctx, SceneOf(ctx), target.RoleState, DecodeNetworkRun,
		Match{"record_type", "NETWORK_RUN"}, Match{"business_key", FixturesOf(ctx).Scope().BusinessKey()}, Match{"network_id", networkID})
}

// CurrentRunID is the run the scenario is about: the run id the latest FlowNet call in play
// on the current network reported; while none has reported one (a run still in the
// background), the one NETWORK_RUN of the scope's business key in that network.
func CurrentRunID(ctx context.Context) (string, error) {
	n, err := FixturesOf(ctx).Rendered()
	if err != nil {
		return "", err
	}
	if id := recordKey.Of(SceneOf(ctx).St).pinned[n.NetworkID]; id != "" {
		return id, nil
	}
	calls := ProcessesOf(ctx).flownetCalls()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].runID != "" && calls[i].network == n.NetworkID {
			return calls[i].runID, nil
		}
	}
	runs, err := runsForBusinessKey(ctx)
	if err != nil {
		return "", err
	}
	if len(runs) != 1 {
		return "", fmt.Errorf("no FlowNet call reported a run id, and the business key %s has %d runs (need exactly one)", FixturesOf(ctx).Scope().BusinessKey(), len(runs))
	}
	return runs[0].RunID, nil
}

// OfTheRun reads the current run's records of one record type from one app.
func OfTheRun[T any](ctx context.Context, role string, decode func(kintoneapi.Record) T, recordType string) ([]T, string, error) {
	id, err := CurrentRunID(ctx)
	if err != nil {
		return nil, "", err
	}
	recs, err := ReadExact(ctx, SceneOf(ctx), role, decode, Match{"record_type", recordType}, Match{"run_id", id})
	return recs, id, err
}

func TheRun(ctx context.Context) (NetworkRun, error) {
	runs, id, err := OfTheRun(ctx, target.RoleState, DecodeNetworkRun, "NETWORK_RUN")
	if err != nil {
		return NetworkRun{}, err
	}
	if len(runs) != 1 {
		return NetworkRun{}, fmt.Errorf("expected one NETWORK_RUN record for run %s, found %d", id, len(runs))
	}
	return runs[0], nil
}

// NodeStates returns the run's NODE_STATE records keyed by rendered node id.
func NodeStates(ctx context.Context) (map[string]NodeState, error) {
	recs, _, err := OfTheRun(ctx, target.RoleState, decodeNodeState, "NODE_STATE")
	if err != nil {
		return nil, err
	}
	out := map[string]NodeState{}
	for _, r := range recs {
		out[r.NodeID] = r
	}
	return out, nil
}

// RunAttempts returns every NODE_ATTEMPT of the run.
func RunAttempts(ctx context.Context) ([]NodeAttempt, error) {
	atts, _, err := OfTheRun(ctx, target.RoleAudit, decodeNodeAttempt, "NODE_ATTEMPT")
	return atts, err
}

// AttemptsOf returns the attempts of one rendered node id, by attempt number.
func AttemptsOf(ctx context.Context, nodeID string) ([]NodeAttempt, error) {
	all, err := RunAttempts(ctx)
	if err != nil {
		return nil, err
	}
	var out []NodeAttempt
	for _, a := range all {
		if a.NodeID == nodeID {
			out = append(out, a)
		}
	}
	SortAttempts(out)
	return out, nil
}

// AttemptsOfNode are the attempts of the fixture node called name, and their attempt numbers
// joined by commas ("" when there are none).
func AttemptsOfNode(ctx context.Context, name string) ([]NodeAttempt, string, error) {
	node, err := FixturesOf(ctx).Node(name)
	if err != nil {
		return nil, "", err
	}
	atts, err := AttemptsOf(ctx, node.ID)
	if err != nil {
		return nil, "", err
	}
	nos := make([]string, len(atts))
	for i, a := range atts {
		nos[i] = fmt.Sprint(a.AttemptNo)
	}
	return atts, strings.Join(nos, ","), nil
}

// Invocations returns the run's RUN_INVOCATION records in creation order.
func Invocations(ctx context.Context) ([]RunInvocation, error) {
	invs, _, err := OfTheRun(ctx, target.RoleAudit, DecodeRunInvocation, "RUN_INVOCATION")
	return invs, err
}

// invocationsCounted reads the run's invocations and asserts there are n.
func invocationsCounted(ctx context.Context, n int) ([]RunInvocation, error) {
	invs, err := Invocations(ctx)
	if err != nil {
		return nil, err
	}
	return invs, SceneOf(ctx).St.On("audit.RUN_INVOCATION.run_id").Equal("invocations of the run", n, len(invs))
}

// SnapshotAttempts records every node's attempts before the FlowNet call named name starts.
func SnapshotAttempts(ctx context.Context, name string) error {
	n, err := FixturesOf(ctx).Rendered()
	if err != nil {
		return err
	}
	snap := map[string][]NodeAttempt{}
	for _, node := range n.Nodes {
		atts, err := AttemptsOf(ctx, node.ID)
		if err != nil {
			return err
		}
		snap[node.FixtureID] = atts
	}
	rs := recordKey.Of(SceneOf(ctx).St)
	if rs.attemptsBefore == nil {
		rs.attemptsBefore = map[string]map[string][]NodeAttempt{}
	}
	rs.attemptsBefore[name] = snap
	return nil
}

// ---- steps ----

func (RecordDomain) exactlyOneRun(ctx context.Context) error {
	_, err := theOneRunOfTheKey(ctx)
	return err
}

// exactlyOneRunForKey reads the NETWORK_RUN records of a business key ({scope} and
// {network_id} filled in) in every network, requires one, of the current network, and makes
// it "the run" of that network.
func (RecordDomain) exactlyOneRunForKey(ctx context.Context, key string) error {
	sc := SceneOf(ctx)
	n, err := FixturesOf(ctx).Rendered()
	if err != nil {
		return err
	}
	key = Expand(ctx, key, n.NetworkID)
	runs, err := ReadExact(ctx, sc, target.RoleState, DecodeNetworkRun, Match{"record_type", "NETWORK_RUN"}, Match{"business_key", key})
	if err != nil {
		return err
	}
	if err := sc.St.On("state.NETWORK_RUN.business_key").Equal("NETWORK_RUN records for business key "+key, 1, len(runs)); err != nil {
		return err
	}
	if err := sc.St.On("state.NETWORK_RUN.network_id").Equal("network_id of the run of business key "+key, n.NetworkID, runs[0].NetworkID); err != nil {
		return err
	}
	rs := recordKey.Of(sc.St)
	if rs.pinned == nil {
		rs.pinned = map[string]string{}
	}
	rs.pinned[n.NetworkID] = runs[0].RunID
	return nil
}

func (RecordDomain) theRunIs(ctx context.Context, status string) error {
	r, err := TheRun(ctx)
	if err != nil {
		return err
	}
	return SceneOf(ctx).St.On("state.NETWORK_RUN.status").Equal("run status", status, r.Status)
}

func (RecordDomain) theRunBecomes(ctx context.Context, status string) error {
	sc := SceneOf(ctx)
	procs := ProcessesOf(ctx)
	var seen string
	err := wait.For(ctx, wait.RunStatus, "run status "+status, func(ctx context.Context) (bool, string, error) {
		// Read whether FlowNet is done before the status: a status read after FlowNet
		// exited is final, since nothing else writes this run.
		done := procs.FlownetDone()
		r, err := TheRun(ctx)
		if err != nil {
			return false, "", err
		}
		seen = r.Status
		if seen != status && done {
			return false, "", wait.Permanent(fmt.Errorf("FlowNet has exited and the run stays %s", seen))
		}
		return seen == status, "status " + seen, nil
	})
	if err != nil {
		sc.St.On("state.NETWORK_RUN.status").Assert("run status", status, OrNone(seen), false)
		return err
	}
	return sc.St.On("state.NETWORK_RUN.status").Equal("run status", status, seen)
}

func (RecordDomain) theNodeStatesAre(ctx context.Context, table *godog.Table) error {
	sc := SceneOf(ctx)
	fx := FixturesOf(ctx)
	states, err := NodeStates(ctx)
	if err != nil {
		return err
	}
	if len(table.Rows) < 2 {
		return fmt.Errorf("the node state table needs a header and at least one row")
	}
	header := table.Rows[0].Cells
	nodeCol := -1
	for i, h := range header {
		switch h.Value {
		case "node":
			nodeCol = i
		case "status", "status_reason", "latest_attempt_no", "blocked_by":
		default:
			return fmt.Errorf("node state table: unknown column %q", h.Value)
		}
	}
	if nodeCol < 0 {
		return fmt.Errorf("node state table: no node column")
	}
	for _, row := range table.Rows[1:] {
		if len(row.Cells) != len(header) {
			return fmt.Errorf("node state table: a row has %d cells, the header %d", len(row.Cells), len(header))
		}
		name := strings.TrimSpace(row.Cells[nodeCol].Value)
		node, err := fx.Node(name)
		if err != nil {
			return err
		}
		rec, ok := states[node.ID]
		if err := sc.St.On("state.NODE_STATE.node_id").Assert("NODE_STATE of "+name+" exists", "present", Presence(ok), ok); err != nil {
			return err
		}
		// Columns in the table's order, so the first failure is the same for the same defect.
		for i, c := range row.Cells {
			col, want := header[i].Value, strings.TrimSpace(c.Value)
			var seen, subject string
			switch col {
			case "node":
				continue
			case "blocked_by":
				seen, subject = fx.fixtureNames(rec.BlockedBy), "state.NODE_STATE.blocked_by"
			case "status":
				seen, subject = rec.Status, "state.NODE_STATE.status"
			case "status_reason":
				seen, subject = rec.StatusReason, "state.NODE_STATE.status_reason"
			case "latest_attempt_no":
				seen, subject = rec.LatestAttemptNo, "state.NODE_STATE.latest_attempt_no"
			default:
				return fmt.Errorf("node state table: unknown column %q", col)
			}
			if want == "" && col != "status" {
				continue // an empty cell means "not checked"
			}
			if err := sc.St.On(subject).Equal(fmt.Sprintf("%s of node %s", col, name), want, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

func (RecordDomain) everyNodeHasOneAttempt(ctx context.Context, status string) error {
	sc := SceneOf(ctx)
	n, err := FixturesOf(ctx).Rendered()
	if err != nil {
		return err
	}
	for _, node := range n.Nodes {
		atts, err := AttemptsOf(ctx, node.ID)
		if err != nil {
			return err
		}
		if err := sc.St.On("audit.NODE_ATTEMPT.node_id").Equal("attempts of node "+node.FixtureID, 1, len(atts)); err != nil {
			return err
		}
		if err := sc.St.On("audit.NODE_ATTEMPT.status").Equal("attempt status of node "+node.FixtureID, status, atts[0].Status); err != nil {
			return err
		}
	}
	return nil
}

func (RecordDomain) invocationsAndLast(ctx context.Context, n int, status string) error {
	invs, err := invocationsCounted(ctx, n)
	if err != nil {
		return err
	}
	return SceneOf(ctx).St.On("audit.RUN_INVOCATION.status").Equal("status of the last invocation", status, invs[len(invs)-1].Status)
}

func (d RecordDomain) lastInvocationIs(ctx context.Context, status string) error {
	return d.lastInvocation(ctx, status, "")
}

func (d RecordDomain) lastInvocationWithCode(ctx context.Context, status, code string) error {
	return d.lastInvocation(ctx, status, code)
}

func (RecordDomain) lastInvocationHasMode(ctx context.Context, mode string) error {
	last, err := TheLastInvocation(ctx)
	if err != nil {
		return err
	}
	return SceneOf(ctx).St.On("audit.RUN_INVOCATION.mode").Equal("mode of the last invocation", mode, last.Mode)
}

func (RecordDomain) lastInvocation(ctx context.Context, status, code string) error {
	sc := SceneOf(ctx)
	last, err := TheLastInvocation(ctx)
	if err != nil {
		return err
	}
	if err := sc.St.On("audit.RUN_INVOCATION.status").Equal("status of the last invocation", status, last.Status); err != nil {
		return err
	}
	// §1.3: the invocation's host is KSQL_FLOWNET_HOST, which every FlowNet command of the
	// scope is given (the poller's children inherit it), the OS host name only without it.
	if err := sc.St.On("audit.RUN_INVOCATION.host").Equal("host of the last invocation against KSQL_FLOWNET_HOST", FixturesOf(ctx).Scope().Host(), OrNone(last.Host)); err != nil {
		return err
	}
	if code != "" {
		return sc.St.On("audit.RUN_INVOCATION.result_code").Equal("result_code of the last invocation", code, OrNone(last.ResultCode))
	}
	return nil
}

func (d RecordDomain) latestAttemptIs(ctx context.Context, node, status, code string) error {
	_, err := d.LatestAttempt(ctx, node, status, code)
	return err
}

// latestAttemptAnyCode checks the status only and notes the result code: where the contract
// names no code for a failure (which code an unmappable Shift_JIS value gives is kSQL-Flow's
// choice), comparing one would test the sandbox, not the product.
func (RecordDomain) latestAttemptAnyCode(ctx context.Context, node, status string) error {
	sc := SceneOf(ctx)
	a, err := LatestAttemptOf(ctx, node)
	if err != nil {
		return err
	}
	sc.St.Note("result_code of the latest attempt of "+node, OrNone(a.ResultCode)+" (not compared: the contract names no code for this failure)")
	return sc.St.On("audit.NODE_ATTEMPT.status").Equal("status of the latest attempt of "+node, status, a.Status)
}

func (d RecordDomain) latestAttemptWithMarker(ctx context.Context, node, status, code string) error {
	a, err := d.LatestAttempt(ctx, node, status, code)
	if err != nil {
		return err
	}
	marker := a.RunnerExecutionStartedAt
	return SceneOf(ctx).St.On("audit.NODE_ATTEMPT.runner_execution_started_at").Assert("runner_execution_started_at of the latest attempt of "+node, "non-empty", OrNone(marker), marker != "")
}

// LatestAttemptOf is the latest attempt of a fixture node, asserting that it has one.
func LatestAttemptOf(ctx context.Context, name string) (NodeAttempt, error) {
	node, err := FixturesOf(ctx).Node(name)
	if err != nil {
		return NodeAttempt{}, err
	}
	atts, err := AttemptsOf(ctx, node.ID)
	if err != nil {
		return NodeAttempt{}, err
	}
	if err := SceneOf(ctx).St.On("audit.NODE_ATTEMPT.node_id").Assert("attempts of node "+name, ">= 1", len(atts), len(atts) >= 1); err != nil {
		return NodeAttempt{}, err
	}
	return atts[len(atts)-1], nil
}

func (RecordDomain) LatestAttempt(ctx context.Context, name, status, code string) (NodeAttempt, error) {
	sc := SceneOf(ctx)
	a, err := LatestAttemptOf(ctx, name)
	if err != nil {
		return a, err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.status").Equal("status of the latest attempt of "+name, status, a.Status); err != nil {
		return a, err
	}
	return a, sc.St.On("audit.NODE_ATTEMPT.result_code").Equal("result_code of the latest attempt of "+name, code, OrNone(a.ResultCode))
}

func (d RecordDomain) attemptsNumbered(ctx context.Context, node, numbers, status string) error {
	return d.attemptsNumberedAll(ctx, node, numbers, status, "")
}

func (d RecordDomain) attemptsNumberedWithCode(ctx context.Context, node, numbers, status, code string) error {
	return d.attemptsNumberedAll(ctx, node, numbers, status, code)
}

// hasNoAttempt: the node was never attempted (m7-05: a BLOCKED non-idempotent node).
func (RecordDomain) hasNoAttempt(ctx context.Context, name string) error {
	_, nos, err := AttemptsOfNode(ctx, name)
	if err != nil {
		return err
	}
	return SceneOf(ctx).St.On("audit.NODE_ATTEMPT.attempt_no").Equal("attempt numbers of node "+name, "(none)", OrNone(nos))
}

func (RecordDomain) attemptsNumberedAll(ctx context.Context, name, numbers, status, code string) error {
	sc := SceneOf(ctx)
	atts, nos, err := AttemptsOfNode(ctx, name)
	if err != nil {
		return err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.attempt_no").Equal("attempt numbers of node "+name, numbers, nos); err != nil {
		return err
	}
	for _, a := range atts {
		if err := sc.St.On("audit.NODE_ATTEMPT.status").Equal(fmt.Sprintf("status of attempt %d of %s", a.AttemptNo, name), status, a.Status); err != nil {
			return err
		}
		if code != "" {
			if err := sc.St.On("audit.NODE_ATTEMPT.result_code").Equal(fmt.Sprintf("result_code of attempt %d of %s", a.AttemptNo, name), code, OrNone(a.ResultCode)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (RecordDomain) invocationWithMode(ctx context.Context, n int, mode, preserved string) error {
	sc := SceneOf(ctx)
	invs, err := invocationsCounted(ctx, n)
	if err != nil {
		return err
	}
	var withMode []RunInvocation
	for _, inv := range invs {
		if inv.Mode == mode {
			withMode = append(withMode, inv)
		}
	}
	if err := sc.St.On("audit.RUN_INVOCATION.mode").Equal("invocations with mode "+mode, 1, len(withMode)); err != nil {
		return err
	}
	return sc.St.On("audit.RUN_INVOCATION.preserved_node_ids").Equal("preserved_node_ids of the "+mode+" invocation", preserved, FixturesOf(ctx).fixtureNames(withMode[0].Preserved))
}

func (RecordDomain) distinctInvocationIDs(ctx context.Context, n int) error {
	invs, err := invocationsCounted(ctx, n)
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for _, inv := range invs {
		if inv.InvocationID != "" {
			ids[inv.InvocationID] = true
		}
	}
	return SceneOf(ctx).St.On("audit.RUN_INVOCATION.invocation_id").Equal("distinct non-empty invocation ids", n, len(ids))
}

func (RecordDomain) someNodeHasAttempt(ctx context.Context, status string) error {
	atts, err := RunAttempts(ctx)
	if err != nil {
		return err
	}
	n := 0
	for _, a := range atts {
		if a.Status == status {
			n++
		}
	}
	return SceneOf(ctx).St.On("audit.NODE_ATTEMPT.status").Assert("attempts with status "+status, ">= 1", n, n >= 1)
}

func (RecordDomain) noNodeGainedAttempt(ctx context.Context, status, ref string) error {
	sc := SceneOf(ctx)
	p, err := ProcessesOf(ctx).Resolve(ref)
	if err != nil {
		return err
	}
	before := recordKey.Of(sc.St).attemptsBefore[p.Name]
	if before == nil {
		return fmt.Errorf("no attempt snapshot was taken before %s started", ref)
	}
	fx := FixturesOf(ctx)
	checked := 0
	for name, atts := range before {
		had := false
		for _, a := range atts {
			had = had || a.Status == status
		}
		if !had {
			continue
		}
		node, err := fx.Node(name)
		if err != nil {
			return err
		}
		after, err := AttemptsOf(ctx, node.ID)
		if err != nil {
			return err
		}
		checked++
		if err := sc.St.On("audit.NODE_ATTEMPT.node_id").Equal("attempts of node "+name+" after "+p.Name, len(atts), len(after)); err != nil {
			return err
		}
	}
	return sc.St.On("audit.NODE_ATTEMPT.status").Assert("nodes with a "+status+" attempt before "+p.Name, ">= 1", checked, checked >= 1)
}

// attemptsCreatedInOrder: serial execution in stable topological order shows as attempt
// records whose ids (kintone assigns them increasing, in creation order) follow the nodes.
func (RecordDomain) attemptsCreatedInOrder(ctx context.Context, order string) error {
	sc := SceneOf(ctx)
	fx := FixturesOf(ctx)
	atts, err := RunAttempts(ctx)
	if err != nil {
		return err
	}
	sort.SliceStable(atts, func(i, j int) bool { return Atoi(atts[i].RecordID) < Atoi(atts[j].RecordID) })
	var nodes []string
	for _, a := range atts {
		nodes = append(nodes, fx.FixtureName(a.NodeID))
	}
	want := strings.Join(strings.Fields(strings.ReplaceAll(order, ",", " ")), ", ")
	// One comparison covers both: taken in record id order, the nodes must be in
	// topological order (and a node that ran twice would show twice).
	return sc.St.On("audit.NODE_ATTEMPT.node_id", "order.run-network.sequential").Equal("nodes of the run's attempts in record id order", want, strings.Join(nodes, ", "))
}

// attemptTimesInOrder checks FlowNet's own NODE_ATTEMPT times (execution_started_at,
// finished_at), which kintone keeps to the minute, against each other and against the
// harness's clock around the FlowNet process — the product's records, where the no-overlap
// step reads kSQL-Flow's millisecond result files. Every bound is one a correct FlowNet meets
// after truncation to the minute (truncation keeps order): the process started before the
// first attempt began, each attempt began before it finished, a node began after the node
// before it finished, and every attempt finished before the process exited (as the harness
// saw it). A finished_at written late by up to a minute is missed by one comparison only if a
// minute boundary falls inside that gap; it takes three disjoint gaps of the three-node chain
// (n1 end → n2 start, n2 end → n3 start, n3 end → exit) each holding a boundary to miss it in
// all, so a run shorter than two minutes cannot hide it.
func (RecordDomain) attemptTimesInOrder(ctx context.Context, ref string) error {
	sc := SceneOf(ctx)
	p, err := ProcessesOf(ctx).Resolve(ref)
	if err != nil {
		return err
	}
	res, done := p.Proc.Exited()
	if !done {
		return fmt.Errorf("%s has not exited: the attempts' bounds need its exit", p.Name)
	}
	began := p.Proc.Started().UTC().Truncate(time.Minute)
	exited := p.Proc.Started().Add(res.Duration).UTC().Truncate(time.Minute)
	n, err := FixturesOf(ctx).Rendered()
	if err != nil {
		return err
	}
	minute := func(what, v string) (time.Time, error) {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, sc.St.On("audit.NODE_ATTEMPT.execution_started_at", "audit.NODE_ATTEMPT.finished_at").Assert("attempt times to the minute: "+what, "a DATETIME", OrNone(v), false)
		}
		return t.UTC().Truncate(time.Minute), nil
	}
	const layout = "2006-01-02T15:04Z"
	notAfter := func(what string, a, b time.Time) error {
		return sc.St.On("audit.NODE_ATTEMPT.execution_started_at", "audit.NODE_ATTEMPT.finished_at").Assert("attempt times to the minute: "+what, "<=", a.Format(layout)+" vs "+b.Format(layout), !a.After(b))
	}
	var prevEnd time.Time
	prevNode := ""
	for _, node := range n.Nodes {
		atts, err := AttemptsOf(ctx, node.ID)
		if err != nil {
			return err
		}
		if err := sc.St.On("audit.NODE_ATTEMPT.node_id").Equal("attempts of node "+node.FixtureID, 1, len(atts)); err != nil {
			return err
		}
		a := atts[0]
		start, err := minute("execution_started_at of "+node.FixtureID, a.ExecutionStartedAt)
		if err != nil {
			return err
		}
		end, err := minute("finished_at set for "+node.FixtureID, a.FinishedAt)
		if err != nil {
			return err
		}
		if err := notAfter("start of "+p.Name+" <= execution_started_at of "+node.FixtureID, began, start); err != nil {
			return err
		}
		if err := notAfter("execution_started_at of "+node.FixtureID+" <= its finished_at", start, end); err != nil {
			return err
		}
		if prevNode != "" {
			if err := notAfter("finished_at of "+prevNode+" <= execution_started_at of "+node.FixtureID, prevEnd, start); err != nil {
				return err
			}
		}
		if err := notAfter("finished_at of "+node.FixtureID+" <= exit of "+p.Name, end, exited); err != nil {
			return err
		}
		prevEnd, prevNode = end, node.FixtureID
	}
	return nil
}
