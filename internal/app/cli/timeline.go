package cli

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/ksqlresult"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/results"
)

// readAttempts is the runner's BeforeCleanup: it reads, with the read-only tokens, the
// NODE_ATTEMPT records the scenario's runs left (the cleanup deletes them next) into the
// scenario record, so index.html can draw the node attempts on the scenario's timeline. What
// it cannot read becomes a note; it never fails a scenario.
func (s *session) readAttempts(tgt *target.Target) func(ctx context.Context, st *scenario.State) {
	return func(ctx context.Context, st *scenario.State) {
		sc := s.prep.scopes[st.ID]
		if sc == nil {
			return
		}
		api, err := tgt.ReadClient(target.RoleState, target.RoleAudit)
		if err != nil {
			st.Note("timeline: node attempts not read", err.Error())
			return
		}
		apps := kintoneguard.Apps{State: tgt.Apps[target.RoleState].ID, Audit: tgt.Apps[target.RoleAudit].ID}
		c, err := kintoneguard.New(countedReader(api), apps, sc.ID(), kintoneguard.Options{Profile: tgt.Profile})
		if err != nil {
			st.Note("timeline: node attempts not read", err.Error())
			return
		}
		readHistory(ctx, c, tgt, st, []string{sc.ID(), sc.Hash8()})
		recs, err := c.ScopeAttempts(ctx)
		if err != nil {
			st.Note("timeline: node attempts not read", err.Error())
			return
		}
		var atts []results.Attempt
		var ids []string
		for _, r := range recs {
			atts, ids = append(atts, attemptOf(r)), append(ids, r.Str("node_attempt_id"))
		}
		attachResults(st, atts, ids)
		sort.SliceStable(atts, func(i, j int) bool {
			if !atts[i].StartedAt.Equal(atts[j].StartedAt) {
				return atts[i].StartedAt.Before(atts[j].StartedAt)
			}
			if atts[i].Node != atts[j].Node {
				return atts[i].Node < atts[j].Node
			}
			return atts[i].AttemptNo < atts[j].AttemptNo
		})
		if len(atts) > 0 {
			st.SetAttempts(atts)
		}
	}
}

// attemptOf is a NODE_ATTEMPT record as the scenario record keeps it: kintone's times, whole
// minutes.
func attemptOf(r kintoneapi.Record) results.Attempt {
	a := results.Attempt{Node: r.Str("node_id"), Status: r.Str("status"), ResultCode: r.Str("result_code"),
		InvocationID: r.Str("invocation_id"), StartedAt: kintoneapi.ParseDateTime(r.Str("execution_started_at")),
		FinishedAt: kintoneapi.ParseDateTime(r.Str("finished_at"))}
	if a.StartedAt.IsZero() {
		a.StartedAt = kintoneapi.ParseDateTime(r.Str("started_at"))
	}
	a.AttemptNo, _ = strconv.Atoi(strings.TrimSpace(r.Str("attempt_no")))
	a.DurationSec, _ = strconv.ParseFloat(strings.TrimSpace(r.Str("duration_sec")), 64)
	return a
}

// attachResults gives each attempt (ids[i] is atts[i]'s node_attempt_id) the times of the
// Execution Result file kSQL-Flow wrote for it in the scenario's KSQL_FLOW_WORKDIR, to the
// millisecond, so the timeline need not guess within kintone's minutes. A scenario whose
// FlowNet ran no node has no such files; a file that cannot be read becomes a note.
func attachResults(st *scenario.State, atts []results.Attempt, ids []string) {
	found, err := ksqlresult.Read(ksqlresult.WorkDir(st.WorkDir))
	if errors.Is(err, ksqlresult.ErrNoResults) {
		return
	}
	if err != nil {
		st.Note("timeline: execution results not all read", err.Error())
	}
	for i, id := range ids {
		r, ok := found[id]
		if id == "" || !ok {
			continue
		}
		start, finish, err := r.Times()
		if err != nil {
			st.Note("timeline: execution result times not read", err.Error())
			continue
		}
		atts[i].Result = &results.AttemptResult{StartedAt: start, FinishedAt: finish, DurationMS: r.DurationMS}
	}
}

// readHistory reads the scenario's state and audit records for its differential history
// (`flowtest archive diff`); what it cannot read becomes a note.
func readHistory(ctx context.Context, c *kintoneguard.Client, tgt *target.Target, st *scenario.State, scopes []string) {
	audit, state, err := c.ScopeRecords(ctx)
	if err != nil {
		st.Note("differential: records not read", err.Error())
		return
	}
	raw := []results.RawRecord{}
	for _, g := range []struct {
		app  string
		recs []kintoneapi.Record
	}{{"state", state}, {"audit", audit}} {
		sort.SliceStable(g.recs, func(i, j int) bool {
			a, _ := strconv.Atoi(g.recs[i].ID())
			b, _ := strconv.Atoi(g.recs[j].ID())
			return a < b
		})
		for _, r := range g.recs {
			rr := results.RawRecord{App: g.app, Fields: map[string]string{}, Types: map[string]string{}}
			for code, f := range r {
				rr.Fields[code], rr.Types[code] = r.Str(code), f.Type
			}
			raw = append(raw, rr)
		}
	}
	apps := map[string]string{}
	for role, a := range tgt.Apps {
		apps[role] = a.ID
	}
	st.SetHistory(raw, apps, scopes)
}
