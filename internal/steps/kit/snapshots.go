package kit

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
)

// snapshotDomain: record-by-record $revision snapshots of the scope's state and audit
// records, taken before a command that must not write (status, a refusal) and compared after
// it. The scope's records are those a cleanup would find: the NETWORK_RUN of every network
// the scenario rendered, every record carrying one of those runs' run_id (Node States, holds,
// Invocations, Attempts, repair audits), the resolutions of their Attempts, the audits that
// name one of the networks, and the networks' held locks. A lock is followed by its $id, so a
// lock turned into a tombstone (its lock_key cleared) still counts as changed. A tombstone
// that an admission refusal writes and releases at once is not among them: the product
// clears everything that would tie it to a network.
type snapshotDomain struct{}

func (d snapshotDomain) register(reg stepdef.Registry) {
	reg.Step(`^the revisions of every state and audit record of the scope are noted$`, d.revisionsAreNoted)
	reg.Step(`^no state or audit record of the scope changed since the revisions were noted$`, d.nothingChanged)
}

// snapshotState is the snapshot noted last.
type snapshotState struct {
	noted *revisionSnapshot
}

var snapshotKey = scenario.NewKey[snapshotState]("snapshots")

// revisionSnapshot is every scope record by app role and $id.
type revisionSnapshot struct {
	records map[string]map[string]recordRevision
}

func (s *revisionSnapshot) add(role string, recs ...recordRevision) {
	if s.records == nil {
		s.records = map[string]map[string]recordRevision{}
	}
	if s.records[role] == nil {
		s.records[role] = map[string]recordRevision{}
	}
	for _, r := range recs {
		s.records[role][r.RecordID] = r
	}
}

// render lists one app's records by ascending $id: "<$id> <record_type> r<$revision>".
func (s *revisionSnapshot) render(role string) string {
	var ids []string
	for id := range s.records[role] {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return Atoi(ids[i]) < Atoi(ids[j]) })
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		r := s.records[role][id]
		parts = append(parts, fmt.Sprintf("%s %s r%s", id, r.RecordType, r.Revision))
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// takeSnapshot reads the scope's records; follow are lock records (by $id) to read again
// whatever became of them.
func takeSnapshot(ctx context.Context, follow []string) (*revisionSnapshot, error) {
	sc, fx := SceneOf(ctx), FixturesOf(ctx)
	snap := &revisionSnapshot{}
	read := func(role string, conds ...Match) ([]recordRevision, error) {
		return ReadExact(ctx, sc, role, decodeRecordRevision, conds...)
	}
	networks := map[string]bool{}
	var runIDs, attemptIDs []string
	for _, n := range fx.Networks() {
		networks[n.NetworkID] = true
		runs, err := read(target.RoleState, Match{"record_type", "NETWORK_RUN"}, Match{"network_id", n.NetworkID})
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			runIDs = append(runIDs, r.RunID)
		}
		lockKey, err := CanonicalKey("N1", sc.Suite.Target.Profile, n.NetworkID)
		if err != nil {
			return nil, err
		}
		locks, err := read(target.RoleState, Match{"record_type", "NETWORK_LOCK"}, Match{"lock_key", lockKey})
		if err != nil {
			return nil, err
		}
		snap.add(target.RoleState, locks...)
	}
	for _, id := range follow {
		locks, err := read(target.RoleState, Match{"$id", id})
		if err != nil {
			return nil, err
		}
		snap.add(target.RoleState, locks...)
	}
	for _, runID := range runIDs {
		for _, role := range []string{target.RoleState, target.RoleAudit} {
			recs, err := read(role, Match{"run_id", runID})
			if err != nil {
				return nil, err
			}
			snap.add(role, recs...)
			for _, r := range recs {
				if r.RecordType == "NODE_ATTEMPT" {
					attemptIDs = append(attemptIDs, r.NodeAttemptID)
				}
			}
		}
	}
	for _, id := range attemptIDs {
		res, err := read(target.RoleAudit, Match{"record_type", "ATTEMPT_RESOLUTION"}, Match{"attempt_id", id})
		if err != nil {
			return nil, err
		}
		snap.add(target.RoleAudit, res...)
	}
	audits, err := read(target.RoleAudit, Match{"record_type", "OPERATION_AUDIT"})
	if err != nil {
		return nil, err
	}
	for _, a := range audits {
		if networks[a.AuditNetworkID] {
			snap.add(target.RoleAudit, a)
		}
	}
	return snap, nil
}

// lockIDs are the $ids of the snapshot's NETWORK_LOCK records.
func (s *revisionSnapshot) lockIDs() []string {
	var out []string
	for id, r := range s.records[target.RoleState] {
		if r.RecordType == "NETWORK_LOCK" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func (snapshotDomain) revisionsAreNoted(ctx context.Context) error {
	sc := SceneOf(ctx)
	snap, err := takeSnapshot(ctx, nil)
	if err != nil {
		return err
	}
	snapshotKey.Of(sc.St).noted = snap
	sc.St.Note("revisions noted", "state: "+snap.render(target.RoleState)+"; audit: "+snap.render(target.RoleAudit))
	return nil
}

func (snapshotDomain) nothingChanged(ctx context.Context) error {
	sc := SceneOf(ctx)
	before := snapshotKey.Of(sc.St).noted
	if before == nil {
		return fmt.Errorf("no revisions were noted first (missing: the revisions of every state and audit record of the scope are noted)")
	}
	after, err := takeSnapshot(ctx, before.lockIDs())
	if err != nil {
		return err
	}
	for _, role := range []string{target.RoleState, target.RoleAudit} {
		if err := sc.St.On("harness.snapshot.revisions").Equal(role+" records of the scope ($id record_type r$revision) against the revisions noted",
			before.render(role), after.render(role)); err != nil {
			return err
		}
	}
	return nil
}
