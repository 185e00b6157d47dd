package flownet

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// The repository's stable codes for the loser of a write race (product-contract §2.6),
// with kintone's answer made by the fault front: a stale-revision loser may get 409
// GAIA_CO02 or 400 GAIA_DA02, and both are REVISION_CONFLICT with exactly the winner's
// write persisted; a CB_VA01 on the unique record_key is DUPLICATE_RECORD.

const msgDA02 = "Failed to save the changes because the database could not be locked. Please wait a while and try again."

func TestNodeStateAndAttemptLosersFoldToRevisionConflict(t *testing.T) {
	s := newSandbox(t, nil)
	front := newFaultFront(t, s)
	st := s.store(t)
	ctx := context.Background()
	// field is a text field of the record the race is about.
	records := map[string]struct {
		app, idField, field string
		rec                 map[string]any
	}{
		"Node State": {st.stateApp, "node_state_id", "status_reason", map[string]any{"record_type": "NODE_STATE", "run_id": "netrun_l", "node_id": "n1", "status": StatusWaiting, "revision": 1}},
		"Attempt":    {st.auditApp, "node_attempt_id", "result_code", map[string]any{"record_type": "NODE_ATTEMPT", "run_id": "netrun_l", "node_id": "n1", "status": StatusRunning}},
	}
	losers := []struct {
		status int
		code   string
		msg    string
	}{
		{http.StatusConflict, "GAIA_CO02", "The revision is not the latest. Someone may update a record."},
		{http.StatusBadRequest, "GAIA_DA02", msgDA02},
	}
	for what, r := range records {
		for _, l := range losers {
			t.Run(what+" "+l.code, func(t *testing.T) {
				rec := vals(r.rec)
				rec[r.idField] = kintoneapi.Field{Value: "id_" + l.code}
				key := "LOSER:" + what + ":" + l.code
				id, rev, err := st.insert(ctx, r.app, key, rec)
				require.NoError(t, err)
				front.on("the other writer wins", 1, updatesKey(r.app, key), func(w http.ResponseWriter, fr frontRequest, fw func() (int, []byte)) {
					_, err := s.admin.UpdateRecord(ctx, r.app, id, kintoneapi.Values(map[string]any{r.field: "winner"}), rev)
					require.NoError(t, err)
					respond(l.status, l.code, l.msg, nil)(w, fr, fw)
				})
				_, err = st.update(ctx, r.app, key, vals(map[string]any{r.field: "loser"}), rev)
				assert.Equal(t, codeRevisionConflict, errCode(err, ""), "%v", err)
				got, err := st.byID(ctx, r.app, id)
				require.NoError(t, err)
				assert.Equal(t, "winner", got.Str(r.field), "exactly the winner's write persists")
				assert.Equal(t, atoi(rev)+1, atoi(got.Revision()))
			})
		}
	}

	// A DA02 with the record untouched: nobody won, nothing was written, fail closed.
	id, rev, err := st.insert(ctx, st.stateApp, "LOSER:untouched", vals(records["Node State"].rec))
	require.NoError(t, err)
	put := updatesKey(st.stateApp, "LOSER:untouched")
	front.on("DA02, nothing written", 1, put, respond(http.StatusBadRequest, "GAIA_DA02", msgDA02, nil))
	_, err = st.update(ctx, st.stateApp, "LOSER:untouched", vals(map[string]any{"status_reason": "mine"}), rev)
	assert.Equal(t, codeRemoteError, errCode(err, ""), "%v", err)
	assert.Equal(t, 1, front.count(put), "not sent again")
	got, err := st.byID(ctx, st.stateApp, id)
	require.NoError(t, err)
	assert.Equal(t, rev, got.Revision())
}

func TestInsertCBVA01OnTheUniqueKeyIsDuplicateRecord(t *testing.T) {
	s := newSandbox(t, nil)
	front := newFaultFront(t, s)
	st := s.store(t)
	ctx := context.Background()
	rec := func(stateID string) kintoneapi.Record {
		return vals(map[string]any{"record_type": "NODE_STATE", "run_id": "netrun_d", "node_id": "n1", "node_state_id": stateID, "status": StatusWaiting})
	}

	// A concurrent insert of the same key by another writer: same run and node, another
	// node_state_id. kintone's real CB_VA01, then the re-read finds a record that is not ours.
	_, _, err := s.admin.AddRecord(ctx, st.stateApp, kintoneapi.Values(map[string]any{"record_key": "STATE:dup", "record_type": "NODE_STATE",
		"run_id": "netrun_d", "node_id": "n1", "node_state_id": "nodestate_other", "status": StatusWaiting}))
	require.NoError(t, err)
	_, _, err = st.insert(ctx, st.stateApp, "STATE:dup", rec("nodestate_mine"), "node_state_id")
	assert.Equal(t, codeDuplicateRecord, errCode(err, ""), "%v", err)

	// kintone says the key is taken but the re-read finds nobody (deleted since): still not ours.
	uniq := map[string]any{"record.record_key.value": map[string]any{"messages": []string{"値がほかのレコードと重複しています。"}}}
	post := isRecordWrite(http.MethodPost)
	front.on("CB_VA01 on record_key", 1, post, respond(http.StatusBadRequest, "CB_VA01", "入力内容が正しくありません。", uniq))
	_, _, err = st.insert(ctx, st.stateApp, "STATE:gone", rec("nodestate_mine"), "node_state_id")
	assert.Equal(t, codeDuplicateRecord, errCode(err, ""), "%v", err)

	// A CB_VA01 about another field is an invalid record, not a duplicate.
	other := map[string]any{"record.status.value": map[string]any{"messages": []string{"選択肢にない値です。"}}}
	front.on("CB_VA01 on status", 1, post, respond(http.StatusBadRequest, "CB_VA01", "入力内容が正しくありません。", other))
	_, _, err = st.insert(ctx, st.stateApp, "STATE:bad", rec("nodestate_mine"), "node_state_id")
	assert.Equal(t, codeRemoteError, errCode(err, ""), "%v", err)
	assert.Empty(t, s.all("state", `record_key in ("STATE:gone", "STATE:bad")`))
}

// The loser's code as run-network shows it: the Node State write that starts n1 loses to
// another writer (kintone answers 409 GAIA_CO02 or 400 GAIA_DA02); run-network stops with
// Error [REVISION_CONFLICT] and the other writer's change is what the Node State holds.
func TestRunNetworkNodeStateLoserIsRevisionConflict(t *testing.T) {
	for _, l := range []struct {
		status     int
		code, text string
	}{{http.StatusConflict, "GAIA_CO02", "The revision is not the latest. Someone may update a record."}, {http.StatusBadRequest, "GAIA_DA02", msgDA02}} {
		t.Run(l.code, func(t *testing.T) {
			s := newSandbox(t, nil)
			front := newFaultFront(t, s)
			ctx := context.Background()
			startsNode := func(r frontRequest) bool {
				status, _ := r.field("status")
				_, bizRev := r.field("revision")
				return isRecordWrite(http.MethodPut)(r) && r.app() == s.apps["state"].ID && bizRev && status == StatusRunning
			}
			var winner string
			lost := front.on("another writer wins the Node State", 1, startsNode, func(w http.ResponseWriter, fr frontRequest, fw func() (int, []byte)) {
				key := fr.updateKeyOf() // FlowNet writes its Node State by updateKey on record_key
				_, err := s.admin.UpdateByKey(ctx, s.apps["state"].ID, "record_key", key, kintoneapi.Values(map[string]any{"status_reason": "the other writer"}), fmt.Sprint(fr.body["revision"]))
				require.NoError(t, err)
				winner = key
				respond(l.status, l.code, l.text, nil)(w, fr, fw)
			})
			r := s.flownet("run-network", s.network("network-success.yaml"), "--business-key", "loser-"+l.code, "--json")
			require.Equal(t, 1, front.firings(lost))
			assert.Equal(t, 1, r.code)
			assert.Contains(t, r.stderr, "Error [REVISION_CONFLICT]")
			ns := s.all("state", `record_key in (`+q(winner)+`)`)
			require.Len(t, ns, 1)
			assert.Equal(t, "the other writer", ns[0].Str("status_reason"))
			assert.Equal(t, StatusWaiting, ns[0].Str("status"), "the loser's RUNNING never landed")
		})
	}
}

// The loser of the Run INSERT (kintone's 400 CB_VA01 on the R1 key, §1.3.1: the unique key is
// the final arbiter) reports DUPLICATE_RECORD and creates nothing; a lost response of the
// winner's own INSERT is adjudicated by the re-read as ours, and the run goes on with one Run.
func TestRunInsertLoserIsDuplicateRecordAndALostInsertIsOurs(t *testing.T) {
	s := newSandbox(t, nil)
	front := newFaultFront(t, s)
	insertsRun := func(r frontRequest) bool {
		kind, _ := r.field("record_type")
		return isRecordWrite(http.MethodPost)(r) && r.app() == s.apps["state"].ID && kind == "NETWORK_RUN"
	}
	lost := front.on("another run-network inserted the key first", 1, insertsRun,
		respond(http.StatusBadRequest, "CB_VA01", "Missing or invalid input.", map[string]any{"record.record_key.value": map[string]any{"messages": []string{"This value already exists in another record."}}}))
	r := s.flownet("run-network", s.network("network-success.yaml"), "--business-key", "insert-loser")
	require.Equal(t, 1, front.firings(lost))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Error [DUPLICATE_RECORD]")
	assert.Empty(t, s.all("state", `record_type in ("NETWORK_RUN") and business_key = "insert-loser"`), "the loser created no Run")

	kept := front.on("the INSERT's response is lost", 1, insertsRun, loseResponse(nil))
	r = s.flownet("run-network", s.network("network-success.yaml"), "--business-key", "insert-lost")
	require.Equal(t, 1, front.firings(kept))
	assert.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Len(t, s.all("state", `record_type in ("NETWORK_RUN") and business_key = "insert-lost"`), 1, "one Run, adjudicated as ours")
}
