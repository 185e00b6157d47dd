// Package invariants checks the contract's invariants after every scenario of flowtest run,
// over the writes of every party the proxies logged and the scope's final records.
//
//	invariants.go  the contract's invariants after every scenario of flowtest run: the parties' writes, final records
package invariants

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/schedule"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
	"github.com/ksqlflow/flowtest/internal/steps/requests"
)

// The contract's invariants (§8, internal/harness/schedule) on every run: at the end of each scenario
// of `flowtest run`, after its steps and before its cleanup, the checkers judge the writes
// every party of the scenario sent through its proxy — each FlowNet process (its fault proxy,
// or the counting proxy of its own, proxy/apiproxy.go) and a requester's background cancel (the
// parties `flowtest explore` schedules) — with the scope's final records. The writes are
// ordered by when a proxy saw kintone answer them (faultproxy.TrafficLine.Answer): for two
// writes that did not overlap that is the order kintone applied them in; overlapping ones are
// ordered by their answers. A violation fails the scenario with the assertion
// "invariant <name>"; an invariant the manifest exempts the scenario from
// (invariant_exemptions) is noted instead, and an exemption whose invariant held is noted
// stale (the run warns).

// ExemptionStaleNote is the note of an exemption whose invariant held: the run lists them.
const ExemptionStaleNote = "invariant exemption stale"

// CheckInvariants runs every invariant over the scenario's writes and final records;
// exempt are the scenario's exemptions (invariant → reason). It records an assertion per
// invariant checked, and returns an error naming the invariants violated.
func CheckInvariants(ctx context.Context, st *scenario.State, exempt map[string]string) error {
	sc := kit.SceneKey.Of(st)
	if sc.St == nil {
		st.Note("invariants", "not checked: the scenario was not prepared (no scene)")
		return nil
	}
	names, proxies := proxy.InvariantKey.Of(st).Parties()
	h := schedule.History{Writes: partyWrites(names, proxies, sc.Suite.Target.AppRoles())}
	var err error
	h.State, h.Audit, h.Request, err = FinalRecords(ctx, st)
	if err != nil {
		return st.On("traffic.invariants").Assert(schedule.AssertionPrefix+"checks: the scope's final records", "read", err.Error(), false)
	}
	st.Note("invariants", fmt.Sprintf("checked over %d writes of %s and the final records (%d state, %d audit, %d request)",
		len(h.Writes), partiesText(names), len(h.State), len(h.Audit), len(h.Request)))
	return judgeInvariants(st, h, exempt)
}

func partiesText(names []string) string {
	if len(names) == 0 {
		return "no party"
	}
	return strings.Join(names, ", ")
}

// partyWrites are the writes to the state, audit and request apps that the proxies logged,
// each under its party's name, in the order their answers came (Seq numbers that order). A
// write that never reached kintone (blocked by a fault mode, answered or reset by a fault
// instead) has status 0: it did nothing, though its request is still judged (puts-fenced).
func partyWrites(names []string, proxies []*faultproxy.Proxy, roles map[string]string) []schedule.Write {
	type logged struct {
		name string
		line faultproxy.TrafficLine
	}
	var all []logged
	for i, p := range proxies {
		for _, l := range p.Traffic() {
			if l.Write != nil && slices.Contains(schedule.ScheduledRoles, roles[l.App]) {
				all = append(all, logged{names[i], l})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b logged) int { return cmp.Compare(a.line.Answer, b.line.Answer) })
	out := make([]schedule.Write, len(all))
	for i, w := range all {
		status := w.line.Status
		if w.line.Blocked || w.line.FaultAction == faultproxy.ActionRespond || w.line.FaultAction == faultproxy.ActionReset {
			status = 0
		}
		out[i] = schedule.WriteOf(i, w.name, roles[w.line.App], *w.line.Write, status)
		if w.line.Created != "" {
			out[i].RecordID = w.line.Created // the record a POST added: a lock is released by its id
		}
		out[i].Released, out[i].Answered = w.line.At, w.line.At
		out[i].Sent, out[i].Answer = w.line.Sent, w.line.Answer
	}
	return out
}

// judgeInvariants records the verdict of every invariant on h: an assertion for each one
// judged, a note for each exempted one (what it exempted, or that the exemption is stale).
func judgeInvariants(st *scenario.State, h schedule.History, exempt map[string]string) error {
	var failed []string
	for _, inv := range schedule.Invariants {
		what := schedule.AssertionPrefix + inv.Name
		vs := inv.Check(h)
		details := make([]string, len(vs))
		for i, v := range vs {
			details[i] = v.Detail
		}
		reason, exempted := exempt[inv.Name]
		switch {
		case exempted && len(vs) > 0:
			st.Note(what+" exempted", fmt.Sprintf("%s; %d violation(s): %s", reason, len(vs), strings.Join(details, "; ")))
		case exempted:
			st.Note(ExemptionStaleNote, fmt.Sprintf("%s held over %d writes: its exemption is not needed (%s)", inv.Name, len(h.Writes), reason))
		default:
			seen := "none"
			if len(vs) > 0 {
				seen = strings.Join(details, "; ")
			}
			if st.On("traffic.invariants").Assert(what, "no violation", seen, len(vs) == 0) != nil {
				failed = append(failed, inv.Name)
			}
		}
	}
	if len(failed) > 0 {
		return errors.New("invariant violated: " + strings.Join(failed, ", "))
	}
	return nil
}

// FinalRecords reads the scope's final records for the invariant checkers (of `flowtest
// explore` per schedule, of `flowtest run` per scenario): the NETWORK_RUN of every network
// the scenario rendered, the state and audit records of those runs, the networks' held locks,
// and every request the scenario created. Call it before the cleanup deletes them.
func FinalRecords(ctx context.Context, st *scenario.State) (state, audit, request []schedule.Record, err error) {
	sc := kit.SceneKey.Of(st)
	if sc.St == nil {
		return nil, nil, nil, fmt.Errorf("final records: the scenario has no scene")
	}
	conv := func(r kintoneapi.Record) schedule.Record {
		out := schedule.Record{}
		for code := range r {
			out[code] = r.Str(code)
		}
		return out
	}
	seen := map[string]bool{}
	add := func(dst *[]schedule.Record, role string, recs []schedule.Record) {
		for _, r := range recs {
			if k := role + "/" + r["$id"]; !seen[k] {
				seen[k] = true
				*dst = append(*dst, r)
			}
		}
	}
	for _, n := range kit.FixtureKey.Of(st).Networks() {
		runs, err := kit.ReadExact(ctx, sc, target.RoleState, conv, kit.FieldIs("record_type", "NETWORK_RUN"), kit.FieldIs("network_id", n.NetworkID))
		if err != nil {
			return nil, nil, nil, err
		}
		add(&state, target.RoleState, runs)
		lockKey, err := kit.CanonicalKey("N1", sc.Suite.Target.Profile, n.NetworkID)
		if err != nil {
			return nil, nil, nil, err
		}
		locks, err := kit.ReadExact(ctx, sc, target.RoleState, conv, kit.FieldIs("record_type", "NETWORK_LOCK"), kit.FieldIs("lock_key", lockKey))
		if err != nil {
			return nil, nil, nil, err
		}
		add(&state, target.RoleState, locks)
		for _, run := range runs {
			for _, role := range []string{target.RoleState, target.RoleAudit} {
				recs, err := kit.ReadExact(ctx, sc, role, conv, kit.FieldIs("run_id", run["run_id"]))
				if err != nil {
					return nil, nil, nil, err
				}
				if role == target.RoleState {
					add(&state, role, recs)
				} else {
					add(&audit, role, recs)
				}
			}
		}
	}
	for _, id := range requests.RequestKey.Of(st).IDs() {
		recs, err := kit.ReadExact(ctx, sc, target.RoleRequest, conv, kit.FieldIs("$id", id))
		if err != nil {
			return nil, nil, nil, err
		}
		add(&request, target.RoleRequest, recs)
	}
	return state, audit, request, nil
}
