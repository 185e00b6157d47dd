package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/base/refusal"
	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/harness/workdir"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/ksqlflow/flowtest/internal/sandbox/emulator"
)

// tenant is an in-process emulator as a target, with a client holding every app's full token
// for planting and counting records.
type tenant struct {
	tgt   *target.Target
	apps  kintoneguard.Apps
	admin *kintoneapi.Client
}

func startTenant(t *testing.T) *tenant {
	t.Helper()
	srv, err := emulator.Start(context.Background(), emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	tgt := &target.Target{Name: "sandbox", Profile: "e2e", BaseURL: srv.BaseURL(), CAFile: srv.CAFile(), Apps: map[string]target.App{}}
	full := map[string]string{}
	for _, a := range srv.Apps() {
		tgt.Apps[a.Role] = target.App{Role: a.Role, Name: a.Name, ID: a.ID, Tokens: a.Tokens}
		full[a.ID] = a.Tokens["full"]
	}
	hc, err := kintoneapi.HTTPClientWithCA(srv.CAFile())
	require.NoError(t, err)
	apps := kintoneguard.Apps{State: tgt.Apps[target.RoleState].ID, Audit: tgt.Apps[target.RoleAudit].ID,
		Request: tgt.Apps[target.RoleRequest].ID, Log: tgt.Apps[target.RoleLog].ID, CSV: tgt.Apps[target.RoleCSV].ID}
	return &tenant{tgt: tgt, apps: apps, admin: kintoneapi.New(srv.BaseURL(), hc, full)}
}

func (tn *tenant) add(t *testing.T, role string, kv map[string]any) {
	t.Helper()
	_, _, err := tn.admin.AddRecord(context.Background(), tn.tgt.Apps[role].ID, kintoneapi.Values(kv))
	require.NoError(t, err, "plant a %s record", role)
}

func (tn *tenant) count(t *testing.T, role string) int {
	t.Helper()
	n, err := tn.admin.Count(context.Background(), tn.tgt.Apps[role].ID, "")
	require.NoError(t, err)
	return n
}

// plantRun writes what a run of sc left: its NETWORK_RUN and an invocation, and when lease is
// non-zero a held NETWORK_LOCK whose lease ends then.
func (tn *tenant) plantRun(t *testing.T, sc *scope.Scope, lease time.Time) {
	t.Helper()
	run := "netrun_" + sc.Hash8()
	net := sc.ID() + "_net"
	tn.add(t, "state", map[string]any{"record_key": "RUN:" + run, "record_type": "NETWORK_RUN", "run_id": run,
		"network_id": net, "business_key": sc.ID(), "status": "RUNNING"})
	tn.add(t, "audit", map[string]any{"record_key": "INV:" + run, "record_type": "RUN_INVOCATION", "run_id": run,
		"invocation_id": "inv_" + sc.Hash8(), "status": "RUNNING"})
	if !lease.IsZero() {
		key := kintoneguard.N1Key("e2e", net)
		at := lease.UTC().Truncate(time.Minute)
		tn.add(t, "state", map[string]any{"record_key": "LOCK:" + key, "record_type": "NETWORK_LOCK", "lock_key": key,
			"profile": "e2e", "owner_invocation_id": "inv_" + sc.Hash8(), "lease_token": "lt_" + sc.Hash8(),
			"lease_expires_at": at.Format(time.RFC3339), "heartbeat_at": at.Add(-time.Minute).Format(time.RFC3339),
			"status": "RUNNING", "network_id": net})
	}
}

func newScope(t *testing.T, label string, made time.Time) *scope.Scope {
	t.Helper()
	sc, err := scope.New(label, made, nil)
	require.NoError(t, err)
	return sc
}

func head(sc *scope.Scope) string { h, _, _ := kintoneguard.ScopeHead(sc.ID()); return h }

// Find sorts every scope on the target into leftovers (listed), scopes to leave whole (a
// lease still runs) and scopes not considered (a live runner's, one made after a live runner
// started, a young one); Delete removes a leftover's records and nothing else.
func TestFindDecidesAndDeleteRemovesOnlyLeftovers(t *testing.T) {
	tn := startTenant(t)
	now := time.Now().UTC()
	dead := newScope(t, "sweep_dead", now.Add(-3*time.Hour))
	leased := newScope(t, "sweep_leased", now.Add(-3*time.Hour))
	young := newScope(t, "sweep_young", now.Add(-time.Minute))
	liveOwn := newScope(t, "sweep_live", now.Add(-3*time.Hour))
	afterLive := newScope(t, "sweep_after", now.Add(-90*time.Minute))
	tn.plantRun(t, dead, now.Add(-2*time.Hour))
	tn.plantRun(t, leased, now.Add(10*time.Minute))
	tn.plantRun(t, young, time.Time{})
	tn.plantRun(t, liveOwn, time.Time{})
	tn.plantRun(t, afterLive, time.Time{})
	tn.add(t, "request", map[string]any{"request_type": "STOP", "reason": dead.ID() + ":stop", "request_state": "REQUESTED"})
	tn.add(t, "request", map[string]any{"request_type": "STOP", "reason": "an operator's own request", "request_state": "DONE"})

	sw, err := New(tn.tgt, tn.apps)
	require.NoError(t, err)
	live := LiveRunners{Heads: map[string]bool{head(liveOwn): true}, Since: now.Add(-2 * time.Hour), Runners: []string{"pid 1 since then"}}
	found, skipped, err := sw.Find(context.Background(), FindOptions{Now: now, OlderThan: time.Hour, Live: live})
	require.NoError(t, err)

	actions := map[string]string{}
	for _, sc := range found {
		actions[sc.Head] = sc.Action
	}
	assert.Equal(t, map[string]string{head(dead): "listed", head(leased): "left"}, actions)
	require.Len(t, skipped, 3)
	assert.Contains(t, skipped, head(liveOwn)+": a live runner's scope on this machine")
	assert.Contains(t, skipped, head(afterLive)+": made after a live runner on this machine started (it may be that runner's)")
	for _, sc := range found {
		switch sc.Head {
		case head(dead):
			assert.Equal(t, [3]int{2, 1, 1}, [3]int{sc.State, sc.Audit, sc.Request}, "state, audit, request of the dead run")
			assert.Equal(t, []string{dead.ID()}, sc.Scopes)
		case head(leased):
			assert.Contains(t, sc.Why, "holds a NETWORK_LOCK whose lease has not run out")
		}
	}

	stateBefore, auditBefore := tn.count(t, "state"), tn.count(t, "audit")
	for i := range found {
		if found[i].Head == head(dead) {
			require.NoError(t, sw.Delete(context.Background(), &found[i]))
			assert.Equal(t, 4, found[i].Deleted)
		}
	}
	assert.Equal(t, stateBefore-2, tn.count(t, "state"))
	assert.Equal(t, auditBefore-1, tn.count(t, "audit"))
	assert.Equal(t, 1, tn.count(t, "request"), "only the operator's own request is left")
}

// The record goes to a dated folder redacted like an archive file; the printed summary counts
// what was swept, left and not considered.
func TestRecordIsRedactedAndPrinted(t *testing.T) {
	red := redact.New(nil, nil)
	red.AddSecret("token state full", "s3cr3t-token-value")
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	rec := &Record{SchemaVersion: 1, Target: "live", BaseURL: "https://tenant.example", At: now, OlderThan: "1h0m0s", Delete: true,
		Scopes: []Scope{
			{Head: "KSQL_FLOW_TEST_240506010101_ab12", Made: now.Add(-6 * time.Hour), State: 2, Action: "deleted", Deleted: 2},
			{Head: "KSQL_FLOW_TEST_240506020202_cd34", Made: now.Add(-5 * time.Hour), State: 1, Action: "left", Why: "lease s3cr3t-token-value"},
		},
		Skipped: []string{"KSQL_FLOW_TEST_240506070000_ef56: made 8m ago"}}
	out := t.TempDir()
	dir, err := WriteRecord(out, now, rec, red)
	require.NoError(t, err)
	assert.Equal(t, out, filepath.Dir(filepath.Dir(dir)), "<out>/<date>/<time>-sweep")
	data, err := os.ReadFile(filepath.Join(dir, RecordFile))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "s3cr3t-token-value")
	var back Record
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Len(t, back.Scopes, 2)

	var b bytes.Buffer
	Print(&b, rec)
	assert.Contains(t, b.String(), "— 2 record(s) deleted")
	assert.Contains(t, b.String(), "not considered: KSQL_FLOW_TEST_240506070000_ef56")
	assert.Contains(t, b.String(), "flowtest sweep: 1 scope(s) swept, 1 left, 1 not considered\n")
}

// This process's own work dir (a live run's, with a scope) is not another live runner's.
func TestFindLiveRunnersLeavesThisProcessOut(t *testing.T) {
	tmp := t.TempDir()
	wd, err := workdir.Create(tmp, false)
	require.NoError(t, err)
	require.NoError(t, wd.AddScopes(newScope(t, "sweep_self", time.Now()).ID()))
	ents, err := workdir.List(tmp)
	require.NoError(t, err)
	require.Len(t, ents, 1)
	require.True(t, ents[0].Alive, "the work dir is a live run's")
	live, err := FindLiveRunners(tmp)
	require.NoError(t, err)
	assert.Empty(t, live.Heads)
	assert.True(t, live.Since.IsZero())
}

// A signal during --delete (stop cancelled) stops the sweep before the next scope: the scope
// being deleted is finished, the rest are untouched and marked as not reached, and the error
// is an interruption (exit 130), not a failure.
func TestDeleteAllStopsAtTheNextScopeWhenInterrupted(t *testing.T) {
	tn := startTenant(t)
	now := time.Now().UTC()
	first := newScope(t, "sweep_first", now.Add(-3*time.Hour))
	second := newScope(t, "sweep_second", now.Add(-3*time.Hour))
	third := newScope(t, "sweep_third", now.Add(-3*time.Hour))
	for _, sc := range []*scope.Scope{first, second, third} {
		tn.plantRun(t, sc, time.Time{})
	}
	sw, err := New(tn.tgt, tn.apps)
	require.NoError(t, err)
	found, _, err := sw.Find(context.Background(), FindOptions{Now: now, OlderThan: time.Hour})
	require.NoError(t, err)
	require.Len(t, found, 3)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var finished []string
	failed, err := sw.DeleteAll(ctx, context.Background(), found, func(sc *Scope) {
		finished = append(finished, sc.Head)
		cancel() // Ctrl-C while the first scope was being deleted
	})
	require.Error(t, err)
	assert.True(t, refusal.IsInterrupted(err), "an interruption, not a failure: %v", err)
	assert.Contains(t, err.Error(), "2 scope(s) not deleted")
	assert.False(t, failed)
	assert.Equal(t, []string{found[0].Head}, finished, "only the scope under way is finished")
	assert.Equal(t, "deleted", found[0].Action)
	for _, sc := range found[1:] {
		assert.Equal(t, "listed", sc.Action, sc.Head)
		assert.Equal(t, Interrupted, sc.Why, sc.Head)
	}
	assert.Equal(t, 2, tn.count(t, "state"), "the two scopes not reached keep their runs")
	assert.Equal(t, 2, tn.count(t, "audit"))

	// Reading stops too: Find under a cancelled context reads no scope.
	_, _, err = sw.Find(ctx, FindOptions{Now: now, OlderThan: time.Hour})
	assert.True(t, refusal.IsInterrupted(err), "%v", err)
}

// sweep.json is written through a temporary file renamed over it: a write that fails leaves
// neither a half record nor a stray temporary file.
func TestWriteRecordLeavesNoHalfFile(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	rec := &Record{SchemaVersion: 1, Target: "sandbox", At: now, OlderThan: "1h0m0s"}
	out := t.TempDir()
	dir, err := WriteRecord(out, now, rec, redact.New(nil, nil))
	require.NoError(t, err)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "only sweep.json, no temporary file")
	assert.Equal(t, RecordFile, ents[0].Name())

	// A record that cannot be placed (its name is taken by a folder): no half file beside it.
	require.NoError(t, os.Remove(filepath.Join(dir, RecordFile)))
	require.NoError(t, os.Mkdir(filepath.Join(dir, RecordFile), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, RecordFile, "x"), 0o755))
	require.NoError(t, results.WriteFileAtomic(filepath.Join(dir, "ok.json"), []byte("{}")))
	err = results.WriteFileAtomic(filepath.Join(dir, RecordFile), []byte("{}"))
	require.Error(t, err)
	ents, err = os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{RecordFile, "ok.json"}, names, "the failed write's temporary file is gone")
}

// A second signal (abort cancelled) cuts the scope under way: it is recorded as failed, not
// as deleted, and nothing after it is touched.
func TestDeleteAllAbortCutsTheScopeUnderWay(t *testing.T) {
	tn := startTenant(t)
	now := time.Now().UTC()
	for _, label := range []string{"sweep_a", "sweep_b"} {
		tn.plantRun(t, newScope(t, label, now.Add(-3*time.Hour)), time.Time{})
	}
	sw, err := New(tn.tgt, tn.apps)
	require.NoError(t, err)
	found, _, err := sw.Find(context.Background(), FindOptions{Now: now, OlderThan: time.Hour})
	require.NoError(t, err)
	require.Len(t, found, 2)
	stop, cancelStop := context.WithCancel(context.Background())
	abort, cancelAbort := context.WithCancel(context.Background())
	cancelStop()
	cancelAbort()
	// Both signals came before the first scope: nothing is deleted.
	_, err = sw.DeleteAll(stop, abort, found, nil)
	assert.True(t, refusal.IsInterrupted(err), "%v", err)
	assert.Equal(t, 2, tn.count(t, "state"))

	// The second signal while the first scope is deleted: that scope fails, the next is not reached.
	stop2, cancelStop2 := context.WithCancel(context.Background())
	defer cancelStop2()
	failed, err := sw.DeleteAll(stop2, abort, found, func(*Scope) { cancelStop2() })
	assert.True(t, refusal.IsInterrupted(err), "%v", err)
	assert.True(t, failed)
	assert.Equal(t, "failed", found[0].Action)
	assert.Contains(t, found[0].Why, "context canceled")
	assert.Equal(t, Interrupted, found[1].Why)
	assert.Equal(t, 2, tn.count(t, "state"), "a delete cut before its first request deletes nothing")
}
