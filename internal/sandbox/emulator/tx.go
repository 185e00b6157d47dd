package emulator

import (
	"sort"
	"strconv"
	"time"
)

// Transactions: the write locks of the apps a request touches, with undo, so every write
// API (and a whole bulkRequest) is all-or-nothing.

// tx is a set of writes under the write locks of the apps involved; all-or-nothing (bulk
// APIs, bulkRequest). A rolled-back request leaves no trace, not even a consumed record id
// (kintone validates a request before it writes anything).
type tx struct {
	s       *Server
	locked  []*app
	nextIDs []int64 // per locked app, restored on rollback
	arrival map[*app]uint64
	undo    []undoEntry
	used    []string // upload file keys this tx reserved (consumed on commit, freed on rollback)
	minted  []string // download keys created in this tx
	dropped []string // download keys no record holds any more (removed on commit)
	now     time.Time
}

type undoEntry struct {
	a    *app
	id   int64
	prev *record // nil: the record did not exist
}

// writeHooks let a test order two writes at the points where atomicity matters, without
// timing (set only by tests of this package; nil hooks cost one comparison).
type writeHooks struct {
	// lockWait runs when a write finds an app's write lock taken, just before it waits.
	lockWait func(appID string)
	// uniqueChecked runs in an add after its unique checks passed, before the insert.
	uniqueChecked func(appID string)
}

// begin locks apps in id order (so concurrent bulk requests cannot deadlock).
func (s *Server) begin(arrival map[*app]uint64, apps ...*app) *tx {
	uniq := map[*app]bool{}
	var list []*app
	for _, a := range apps {
		if !uniq[a] {
			uniq[a] = true
			list = append(list, a)
		}
	}
	sort.Slice(list, func(i, j int) bool { return appIDLess(list[i].id(), list[j].id()) })
	ids := make([]int64, len(list))
	for i, a := range list {
		if !a.mu.TryLock() {
			if h := s.hooks.lockWait; h != nil {
				h(a.id())
			}
			a.mu.Lock()
		}
		ids[i] = a.nextID
	}
	return &tx{s: s, locked: list, nextIDs: ids, arrival: arrival, now: s.now()}
}

func appIDLess(x, y string) bool {
	a, errA := strconv.Atoi(x)
	b, errB := strconv.Atoi(y)
	if errA == nil && errB == nil {
		return a < b
	}
	return x < y
}

func (t *tx) commit() {
	t.s.files.commit(t)
	t.unlock()
}

func (t *tx) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		u := t.undo[i]
		if u.prev == nil {
			u.a.remove(u.id)
		} else {
			u.a.put(u.prev)
		}
	}
	for i, a := range t.locked {
		a.nextID = t.nextIDs[i]
	}
	t.s.files.rollback(t)
	t.unlock()
}

func (t *tx) unlock() {
	for i := len(t.locked) - 1; i >= 0; i-- {
		t.locked[i].mu.Unlock()
	}
	t.locked = nil
}

// dropFiles notes the attachments of prev that next (nil: deleted) no longer holds.
func (t *tx) dropFiles(a *app, prev, next *record) {
	if prev == nil {
		return
	}
	for _, f := range a.ordered {
		if f.Type != "FILE" {
			continue
		}
		old, _ := prev.vals[f.Code].([]fileVal)
		var keep []fileVal
		if next != nil {
			keep, _ = next.vals[f.Code].([]fileVal)
		}
	next:
		for _, o := range old {
			for _, k := range keep {
				if k.FileKey == o.FileKey {
					continue next
				}
			}
			t.dropped = append(t.dropped, o.FileKey)
		}
	}
}

func (t *tx) write(a *app, r *record) {
	t.dropFiles(a, a.records[r.id], r)
	t.undo = append(t.undo, undoEntry{a: a, id: r.id, prev: a.records[r.id]})
	r.modSeq = a.modSeq.Add(1)
	a.put(r)
}

func (t *tx) delete(a *app, id int64) {
	t.dropFiles(a, a.records[id], nil)
	t.undo = append(t.undo, undoEntry{a: a, id: id, prev: a.records[id]})
	a.modSeq.Add(1)
	a.remove(id)
}
