package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/harness/wait"
	"github.com/ksqlflow/flowtest/kintoneapi"
)

// Reads of the run graph: NETWORK_RUN and NODE_STATE in the state app, NODE_ATTEMPT and
// RUN_INVOCATION in the audit app, rows of the JOB log. Read-only tokens only.

func quote(v string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`) + `"`
}

func (w *world) app(role string) string { return w.suite.Target.Apps[role].ID }

func (w *world) runsForBusinessKey(ctx context.Context) ([]kintoneapi.Record, error) {
	return w.reader.GetAll(ctx, w.app(target.RoleState),
		fmt.Sprintf(`record_type in ("NETWORK_RUN") and business_key = %s`, quote(w.scope.BusinessKey())), nil)
}

func (w *world) requireRunID(ctx context.Context) (string, error) {
	if w.runID != "" {
		return w.runID, nil
	}
	runs, err := w.runsForBusinessKey(ctx)
	if err != nil {
		return "", err
	}
	if len(runs) != 1 {
		return "", fmt.Errorf("expected exactly one run for business key %s, found %d", w.scope.BusinessKey(), len(runs))
	}
	w.runID = runs[0].Str("run_id")
	return w.runID, nil
}

// recordsOfRun reads the records of one type that belong to the scenario's run, in
// creation order.
func (w *world) recordsOfRun(ctx context.Context, role, recordType string) ([]kintoneapi.Record, error) {
	id, err := w.requireRunID(ctx)
	if err != nil {
		return nil, err
	}
	return w.reader.GetAll(ctx, w.app(role),
		fmt.Sprintf(`record_type in (%s) and run_id = %s`, quote(recordType), quote(id)), nil)
}

func (w *world) run(ctx context.Context) (kintoneapi.Record, error) {
	recs, err := w.recordsOfRun(ctx, target.RoleState, "NETWORK_RUN")
	if err != nil {
		return nil, err
	}
	if len(recs) != 1 {
		return nil, fmt.Errorf("expected one NETWORK_RUN record for run %s, found %d", w.runID, len(recs))
	}
	return recs[0], nil
}

// nodeStates returns the NODE_STATE records of the run keyed by rendered node id.
func (w *world) nodeStates(ctx context.Context) (map[string]kintoneapi.Record, error) {
	recs, err := w.recordsOfRun(ctx, target.RoleState, "NODE_STATE")
	if err != nil {
		return nil, err
	}
	out := map[string]kintoneapi.Record{}
	for _, r := range recs {
		out[r.Str("node_id")] = r
	}
	return out, nil
}

func (w *world) auditRecords(ctx context.Context, recordType string) ([]kintoneapi.Record, error) {
	return w.recordsOfRun(ctx, target.RoleAudit, recordType)
}

// attemptsOf returns the NODE_ATTEMPT records of one rendered node id, by attempt number.
func (w *world) attemptsOf(ctx context.Context, nodeID string) ([]kintoneapi.Record, error) {
	all, err := w.auditRecords(ctx, "NODE_ATTEMPT")
	if err != nil {
		return nil, err
	}
	var out []kintoneapi.Record
	for _, r := range all {
		if r.Str("node_id") == nodeID {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return atoi(out[i].Str("attempt_no")) < atoi(out[j].Str("attempt_no")) })
	return out, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

func jsonList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return []string{"unparseable:" + s}
	}
	return out
}

func (w *world) fixtureNodes(ids []string) string {
	var out []string
	for _, id := range ids {
		out = append(out, w.fixtureNode(id))
	}
	return strings.Join(out, ",")
}

// nodeOrder is the fixture's node order (the order the YAML lists them).
func (w *world) nodeOrder() []string {
	var out []string
	for _, n := range w.network.Nodes {
		out = append(out, n.FixtureID)
	}
	return out
}

func addRecordSteps(reg stepdef.Registry) {
	reg.Step(`^exactly one run exists for the business key$`, func(ctx context.Context) error {
		w := worldFrom(ctx)
		runs, err := w.runsForBusinessKey(ctx)
		if err != nil {
			return err
		}
		return w.st.Equal("NETWORK_RUN records for the business key", 1, len(runs))
	})
	reg.Step(`^the run is "([^"]+)"$`, func(ctx context.Context, status string) error {
		w := worldFrom(ctx)
		r, err := w.run(ctx)
		if err != nil {
			return err
		}
		return w.st.Equal("run status", status, r.Str("status"))
	})
	reg.Step(`^the run becomes "([^"]+)"$`, func(ctx context.Context, status string) error {
		w := worldFrom(ctx)
		var seen string
		err := wait.Until(ctx, "run status "+status, 2*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
			// Read whether FlowNet is done before the status: a status read after FlowNet
			// exited is final, since nothing else writes this run.
			done := w.flowNetDone()
			r, err := w.run(ctx)
			if err != nil {
				return false, "", err
			}
			seen = r.Str("status")
			if seen != status && done {
				return false, "", wait.Permanent(fmt.Errorf("FlowNet has exited and the run stays %s", seen))
			}
			return seen == status, "status " + seen, nil
		})
		if err != nil {
			w.st.Assert("run status", status, seen, false)
			return err
		}
		return w.st.Equal("run status", status, seen)
	})
	reg.Step(`^the node states are:$`, func(ctx context.Context, table *godog.Table) error {
		w := worldFrom(ctx)
		states, err := w.nodeStates(ctx)
		if err != nil {
			return err
		}
		if len(table.Rows) < 2 {
			return fmt.Errorf("the node state table needs a header and at least one row")
		}
		header := table.Rows[0].Cells
		for _, row := range table.Rows[1:] {
			if len(row.Cells) != len(header) {
				return fmt.Errorf("node state table: a row has %d cells, the header %d", len(row.Cells), len(header))
			}
			fixture := ""
			for i, c := range row.Cells {
				if header[i].Value == "node" {
					fixture = strings.TrimSpace(c.Value)
				}
			}
			id, err := w.nodeID(fixture)
			if err != nil {
				return err
			}
			rec, ok := states[id]
			if err := w.st.Assert("NODE_STATE of "+fixture+" exists", "present", presence(ok), ok); err != nil {
				return err
			}
			// Columns are checked in the table's order, so the first failure is always the
			// same one for the same defect.
			for i, c := range row.Cells {
				col, want := header[i].Value, strings.TrimSpace(c.Value)
				var seen string
				switch col {
				case "node":
					continue
				case "blocked_by":
					seen = w.fixtureNodes(jsonList(rec.Str("blocked_by")))
				case "status", "status_reason", "latest_attempt_no":
					seen = rec.Str(col)
				default:
					return fmt.Errorf("node state table: unknown column %q", col)
				}
				if want == "" && col != "status" {
					continue // an empty cell means "not checked"
				}
				if err := w.st.Equal(fmt.Sprintf("%s of node %s", col, fixture), want, seen); err != nil {
					return err
				}
			}
		}
		return nil
	})
	reg.Step(`^every node has exactly 1 attempt and it is "([^"]+)"$`, func(ctx context.Context, status string) error {
		w := worldFrom(ctx)
		for _, n := range w.network.Nodes {
			atts, err := w.attemptsOf(ctx, n.ID)
			if err != nil {
				return err
			}
			if err := w.st.Equal("attempts of node "+n.FixtureID, 1, len(atts)); err != nil {
				return err
			}
			if err := w.st.Equal("attempt status of node "+n.FixtureID, status, atts[0].Str("status")); err != nil {
				return err
			}
		}
		return nil
	})
	reg.Step(`^the run has (\d+) invocations? and the last one is "([^"]+)"$`, func(ctx context.Context, n int, status string) error {
		w := worldFrom(ctx)
		invs, err := w.invocationsCounted(ctx, n)
		if err != nil {
			return err
		}
		return w.st.Equal("status of the last invocation", status, invs[len(invs)-1].Str("status"))
	})
	reg.Step(`^the last invocation is "([^"]+)"$`, func(ctx context.Context, status string) error {
		return lastInvocation(ctx, status, "")
	})
	reg.Step(`^the last invocation is "([^"]+)" with result code "([^"]+)"$`, func(ctx context.Context, status, code string) error {
		return lastInvocation(ctx, status, code)
	})
	reg.Step(`^the attempts of consecutive nodes do not overlap in time$`, func(ctx context.Context) error {
		w := worldFrom(ctx)
		var prev *kintoneapi.Record
		var prevNode string
		for _, n := range w.network.Nodes {
			atts, err := w.attemptsOf(ctx, n.ID)
			if err != nil {
				return err
			}
			if len(atts) == 0 {
				return fmt.Errorf("node %s has no attempt", n.FixtureID)
			}
			cur := atts[0]
			if prev != nil {
				fin, err1 := time.Parse(time.RFC3339, prev.Str("finished_at"))
				start, err2 := time.Parse(time.RFC3339, cur.Str("execution_started_at"))
				if err1 != nil || err2 != nil {
					return fmt.Errorf("attempt times of %s/%s unreadable: finished_at %q, execution_started_at %q", prevNode, n.FixtureID, prev.Str("finished_at"), cur.Str("execution_started_at"))
				}
				what := fmt.Sprintf("%s finished_at <= %s execution_started_at", prevNode, n.FixtureID)
				if err := w.st.Assert(what, "finished_at <= execution_started_at", fmt.Sprintf("%s vs %s", fin.Format(time.RFC3339), start.Format(time.RFC3339)), !fin.After(start)); err != nil {
					return err
				}
			}
			prev, prevNode = &cur, n.FixtureID
		}
		return nil
	})
	reg.Step(`^the JOB log has exactly (\d+) rows correlated with the run$`, func(ctx context.Context, n int) error {
		w := worldFrom(ctx)
		rows, err := w.jobLogForRun(ctx)
		if err != nil {
			return err
		}
		return w.st.Equal("JOB log rows with correlation_id = run_id", n, len(rows))
	})
	reg.Step(`^every attempt has a JOB log row with its attempt, execution and job ids and status "([^"]+)"$`, func(ctx context.Context, status string) error {
		w := worldFrom(ctx)
		rows, err := w.jobLogForRun(ctx)
		if err != nil {
			return err
		}
		byAttempt := map[string]kintoneapi.Record{}
		for _, r := range rows {
			byAttempt[r.Str("attempt_id")] = r
		}
		atts, err := w.auditRecords(ctx, "NODE_ATTEMPT")
		if err != nil {
			return err
		}
		for _, a := range atts {
			node := w.fixtureNode(a.Str("node_id"))
			row, ok := byAttempt[a.Str("node_attempt_id")]
			if err := w.st.Assert("JOB log row for the attempt of "+node, "present", presence(ok), ok); err != nil {
				return err
			}
			checks := [][3]string{
				{"correlation_id", w.runID, row.Str("correlation_id")},
				{"job_id", a.Str("job_id"), row.Str("job_id")},
				{"execution_id", a.Str("execution_id"), row.Str("execution_id")},
				{"status", status, row.Str("status")},
			}
			for _, c := range checks {
				if err := w.st.Equal(fmt.Sprintf("JOB log %s for %s", c[0], node), c[1], c[2]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	reg.Step(`^the latest attempt of node "([^"]+)" is "([^"]+)" with result code "([^"]+)"$`, func(ctx context.Context, node, status, code string) error {
		_, err := latestAttempt(ctx, node, status, code)
		return err
	})
	reg.Step(`^the latest attempt of node "([^"]+)" is "([^"]+)" with result code "([^"]+)" and a start marker$`, func(ctx context.Context, node, status, code string) error {
		a, err := latestAttempt(ctx, node, status, code)
		if err != nil {
			return err
		}
		w := worldFrom(ctx)
		marker := a.Str("runner_execution_started_at")
		return w.st.Assert("runner_execution_started_at of the latest attempt of "+node, "non-empty", orNone(marker), marker != "")
	})
	reg.Step(`^node "([^"]+)" has attempts numbered "([^"]+)", all "([^"]+)"$`, func(ctx context.Context, node, numbers, status string) error {
		return attemptsNumbered(ctx, node, numbers, status, "")
	})
	reg.Step(`^node "([^"]+)" has attempts numbered "([^"]+)", all "([^"]+)" with result code "([^"]+)"$`, func(ctx context.Context, node, numbers, status, code string) error {
		return attemptsNumbered(ctx, node, numbers, status, code)
	})
	reg.Step(`^the run has (\d+) invocations and exactly one with mode "([^"]+)" preserving "([^"]+)"$`, func(ctx context.Context, n int, mode, preserved string) error {
		w := worldFrom(ctx)
		invs, err := w.invocationsCounted(ctx, n)
		if err != nil {
			return err
		}
		var withMode []kintoneapi.Record
		for _, inv := range invs {
			if inv.Str("mode") == mode {
				withMode = append(withMode, inv)
			}
		}
		if err := w.st.Equal("invocations with mode "+mode, 1, len(withMode)); err != nil {
			return err
		}
		return w.st.Equal("preserved_node_ids of the "+mode+" invocation", preserved, w.fixtureNodes(jsonList(withMode[0].Str("preserved_node_ids"))))
	})
	reg.Step(`^the run has (\d+) invocations with distinct non-empty invocation ids$`, func(ctx context.Context, n int) error {
		w := worldFrom(ctx)
		invs, err := w.invocationsCounted(ctx, n)
		if err != nil {
			return err
		}
		ids := map[string]bool{}
		for _, inv := range invs {
			if id := inv.Str("invocation_id"); id != "" {
				ids[id] = true
			}
		}
		return w.st.Equal("distinct non-empty invocation ids", n, len(ids))
	})
	reg.Step(`^at least one node has a "([^"]+)" attempt$`, func(ctx context.Context, status string) error {
		w := worldFrom(ctx)
		atts, err := w.auditRecords(ctx, "NODE_ATTEMPT")
		if err != nil {
			return err
		}
		n := 0
		for _, a := range atts {
			if a.Str("status") == status {
				n++
			}
		}
		return w.st.Assert("attempts with status "+status, ">= 1", n, n >= 1)
	})
	reg.Step(`^no node that had a "([^"]+)" attempt gained an attempt$`, func(ctx context.Context, status string) error {
		w := worldFrom(ctx)
		if w.attemptsBefore == nil {
			return fmt.Errorf("no attempt snapshot was taken before the resume")
		}
		checked := 0
		for node, before := range w.attemptsBefore {
			had := false
			for _, a := range before {
				had = had || a.Str("status") == status
			}
			if !had {
				continue
			}
			id, err := w.nodeID(node)
			if err != nil {
				return err
			}
			after, err := w.attemptsOf(ctx, id)
			if err != nil {
				return err
			}
			checked++
			if err := w.st.Equal("attempts of node "+node+" after the resume", len(before), len(after)); err != nil {
				return err
			}
		}
		return w.st.Assert("nodes with a "+status+" attempt before the resume", ">= 1", checked, checked >= 1)
	})
}

func presence(ok bool) string {
	if ok {
		return "present"
	}
	return "missing"
}

func lastInvocation(ctx context.Context, status, code string) error {
	w := worldFrom(ctx)
	invs, err := w.auditRecords(ctx, "RUN_INVOCATION")
	if err != nil {
		return err
	}
	if len(invs) == 0 {
		return w.st.Assert("invocations of the run", ">= 1", 0, false)
	}
	last := invs[len(invs)-1]
	if err := w.st.Equal("status of the last invocation", status, last.Str("status")); err != nil {
		return err
	}
	if code != "" {
		return w.st.Equal("result_code of the last invocation", code, last.Str("result_code"))
	}
	return nil
}

func latestAttempt(ctx context.Context, node, status, code string) (kintoneapi.Record, error) {
	w := worldFrom(ctx)
	id, err := w.nodeID(node)
	if err != nil {
		return nil, err
	}
	atts, err := w.attemptsOf(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := w.st.Assert("attempts of node "+node, ">= 1", len(atts), len(atts) >= 1); err != nil {
		return nil, err
	}
	a := atts[len(atts)-1]
	if err := w.st.Equal("status of the latest attempt of "+node, status, a.Str("status")); err != nil {
		return nil, err
	}
	if err := w.st.Equal("result_code of the latest attempt of "+node, code, a.Str("result_code")); err != nil {
		return nil, err
	}
	return a, nil
}

func attemptsNumbered(ctx context.Context, node, numbers, status, code string) error {
	w := worldFrom(ctx)
	id, err := w.nodeID(node)
	if err != nil {
		return err
	}
	atts, err := w.attemptsOf(ctx, id)
	if err != nil {
		return err
	}
	var nos []string
	for _, a := range atts {
		nos = append(nos, a.Str("attempt_no"))
	}
	if err := w.st.Equal("attempt numbers of node "+node, numbers, strings.Join(nos, ",")); err != nil {
		return err
	}
	for _, a := range atts {
		if err := w.st.Equal(fmt.Sprintf("status of attempt %s of %s", a.Str("attempt_no"), node), status, a.Str("status")); err != nil {
			return err
		}
		if code != "" {
			if err := w.st.Equal(fmt.Sprintf("result_code of attempt %s of %s", a.Str("attempt_no"), node), code, a.Str("result_code")); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *world) jobLogForRun(ctx context.Context) ([]kintoneapi.Record, error) {
	id, err := w.requireRunID(ctx)
	if err != nil {
		return nil, err
	}
	return w.reader.GetAll(ctx, w.app(target.RoleLog), fmt.Sprintf(`correlation_id = %s`, quote(id)), nil)
}

// invocationsCounted reads the run's invocations (creation order) and asserts there are n.
func (w *world) invocationsCounted(ctx context.Context, n int) ([]kintoneapi.Record, error) {
	invs, err := w.auditRecords(ctx, "RUN_INVOCATION")
	if err != nil {
		return nil, err
	}
	return invs, w.st.Equal("invocations of the run", n, len(invs))
}

// snapshotAttempts records every node's attempts before a resume.
func (w *world) snapshotAttempts(ctx context.Context) error {
	w.attemptsBefore = map[string][]kintoneapi.Record{}
	for _, n := range w.network.Nodes {
		atts, err := w.attemptsOf(ctx, n.ID)
		if err != nil {
			return err
		}
		w.attemptsBefore[n.FixtureID] = atts
	}
	return nil
}
