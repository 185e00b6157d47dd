package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// faultTrafficDomain: what a named FlowNet process sent through its fault proxy (faults.go),
// judged once the process has ended: call budgets by counter, heartbeats bounded by how long
// it held its lease, no write after its lease ran out.
type faultTrafficDomain struct{}

func (d faultTrafficDomain) register(reg stepdef.Registry) {
	reg.Step(`^(?:on the sandbox|with the reference FlowNet|(on a live target|with a real FlowNet)), the kintone calls counted by the fault proxies are within:$`, d.callsWithinOn)
	reg.Step(`^"([^"]+)" sent at most one heartbeat per (\d+) s of its lease, plus one, and one before each of its other record writes$`, d.heartbeatsPerInterval)
	reg.Step(`^the (\d+) s lease of "([^"]+)" never ran out while it ran$`, d.leaseNeverRanOut)
	reg.Step(`^no write of "([^"]+)" reached its fault proxy after the (\d+) s lease it last carried ran out$`, d.noWriteAfterLease)
}

// countColumns are the counters a call-budget table may bound (m7-03), read from a proxy's
// Counts: "records GET" is /k/v1/record(s).json by method, "heartbeat" the lease PUTs.
var countColumns = map[string]func(faultproxy.Counts) int{
	"total":        func(c faultproxy.Counts) int { return c.Total },
	"blocked":      func(c faultproxy.Counts) int { return c.Blocked },
	"records GET":  func(c faultproxy.Counts) int { return c.Records["GET"] },
	"records POST": func(c faultproxy.Counts) int { return c.Records["POST"] },
	"records PUT":  func(c faultproxy.Counts) int { return c.Records["PUT"] },
	"file":         func(c faultproxy.Counts) int { return c.File },
	"other":        func(c faultproxy.Counts) int { return c.Other },
	"heartbeat":    func(c faultproxy.Counts) int { return c.Heartbeat },
	// Less the lease monitor's ticks: each heartbeat is one fence read and one PUT
	// (product-contract §3.7), and how many ticks a run has depends on how long it ran, so
	// these are the calls a run makes whatever the tenant's speed.
	"calls less heartbeats":       func(c faultproxy.Counts) int { return c.Total - 2*c.Heartbeat },
	"records GET less fences":     func(c faultproxy.Counts) int { return c.Records["GET"] - c.Heartbeat },
	"records PUT less heartbeats": func(c faultproxy.Counts) int { return c.Records["PUT"] - c.Heartbeat },
}

// callsWithin compares each named process's proxy counters with the table's bounds: a cell
// is "n" (exactly), "lo..hi", "lo.." (at least) or empty (not checked). The process must
// have ended, so its counts are final; every count is noted as evidence first.
func (faultTrafficDomain) callsWithin(ctx context.Context, table *godog.Table) error {
	sc := kit.SceneOf(ctx)
	if len(table.Rows) < 2 {
		return fmt.Errorf("the call table needs a header and at least one row")
	}
	header := table.Rows[0].Cells
	if header[0].Value != "process" {
		return fmt.Errorf("the call table's first column must be process")
	}
	for _, h := range header[1:] {
		if countColumns[h.Value] == nil {
			return fmt.Errorf("call table: unknown column %q", h.Value)
		}
	}
	for _, row := range table.Rows[1:] {
		if len(row.Cells) != len(header) {
			return fmt.Errorf("call table: a row has %d cells, the header %d", len(row.Cells), len(header))
		}
		name := strings.TrimSpace(row.Cells[0].Value)
		p, err := EndedProxy(ctx, name, "its call counts are not final")
		if err != nil {
			return err
		}
		c := p.Counts()
		sc.St.Note("kintone calls of "+name, countSummary(c))
		for i, cell := range row.Cells[1:] {
			col, want := header[i+1].Value, strings.TrimSpace(cell.Value)
			if want == "" {
				continue
			}
			lo, hi, err := kit.ParseBound(want)
			if err != nil {
				return fmt.Errorf("call table, %s of %s: %w", col, name, err)
			}
			n := countColumns[col](c)
			if err := sc.St.On("traffic.calls").Assert(fmt.Sprintf("%s calls of %s", col, name), want, n, n >= lo && (hi < 0 || n <= hi)); err != nil {
				return err
			}
		}
	}
	return nil
}

// callsWithinOn applies a call table to one kind of FlowNet only: the reference FlowNet
// keeps a tight regression budget of our own counts; a real FlowNet (on a live target, or
// the real product on the sandbox, --product) the bounds the original set: it may spend
// calls differently within the contract. The other table is noted as not applied. real is
// non-empty for the real FlowNet's table.
func (d faultTrafficDomain) callsWithinOn(ctx context.Context, real string, table *godog.Table) error {
	sc := kit.SceneOf(ctx)
	t := sc.Suite.Target
	realFlowNet := t.Name != "sandbox" || t.Product.Real
	if realFlowNet != (real != "") {
		which := "the reference FlowNet's"
		if real != "" {
			which = "a real FlowNet's"
		}
		sc.St.Note("call budget: "+which, "not applied: this run drives "+t.Product.Label()+" on the "+t.Name+" target")
		return nil
	}
	return d.callsWithin(ctx, table)
}

// AddressesRecord: the logged request names the record with $id id or record_key key, by
// the body's "id" or by its updateKey. The real FlowNet writes its own records (Run, Node
// State, hold, Attempt, Invocation) by updateKey on record_key and a lock's release and the
// request app's records by id; a step that means "the PUT of this record" finds it either
// way.
func AddressesRecord(l faultproxy.TrafficLine, id, key string) bool {
	return id != "" && l.RecordID == id || key != "" && l.RecordKey == key
}

// recordNamed is how a logged request named its record, for a note: its id, its updateKey
// value ("key <k>"), or (none).
func recordNamed(id, key string) string {
	switch {
	case id != "":
		return id
	case key != "":
		return "key " + key
	}
	return kit.OrNone("")
}

// countSummary is one proxy's counters on one line, for the record's notes.
func countSummary(c faultproxy.Counts) string {
	return fmt.Sprintf("total=%d blocked=%d records GET=%d POST=%d PUT=%d file=%d other=%d heartbeat=%d",
		c.Total, c.Blocked, c.Records["GET"], c.Records["POST"], c.Records["PUT"], c.File, c.Other, c.Heartbeat)
}

// leaseDeadlineOf: the time of the last lease write (a 2xx request touching
// lease_expires_at: the lock's acquisition or a heartbeat) among a proxy's requests, and that
// time plus the lease.
func leaseDeadlineOf(name string, lines []faultproxy.TrafficLine, lease int) (last, deadline time.Time, err error) {
	for _, l := range lines {
		if l.Status/100 == 2 && slices.Contains(l.Fields, "lease_expires_at") && l.At.After(last) {
			last = l.At
		}
	}
	if last.IsZero() {
		return last, last, fmt.Errorf("no lease write of %q passed its fault proxy", name)
	}
	return last, last.Add(time.Duration(lease) * time.Second), nil
}

// noWriteAfterLease: once its lease has run out, FlowNet sends no control-plane write
// (product-contract §3.7: drain retries are bounded by the lease; an unconfirmed lease loss
// leaves every record untouched). Every write (any method but GET) the named process sent
// through its proxy after the last lease write plus the lease is listed; there must be none.
// The process must have ended.
func (faultTrafficDomain) noWriteAfterLease(ctx context.Context, name string, lease int) error {
	sc := kit.SceneOf(ctx)
	p, err := EndedProxy(ctx, name, "wait for its exit first")
	if err != nil {
		return err
	}
	lines := p.Traffic()
	_, deadline, err := leaseDeadlineOf(name, lines, lease)
	if err != nil {
		return err
	}
	appRole := map[string]string{}
	for _, role := range []string{target.RoleState, target.RoleAudit, target.RoleRequest, target.RoleLog} {
		if id := sc.App(role); id != "" {
			appRole[id] = role // never a raw app id in the record
		}
	}
	var late []string
	for _, l := range lines {
		if l.Method != "GET" && l.At.After(deadline) {
			late = append(late, fmt.Sprintf("%s %s %s app record %s, %s after the deadline", l.Method, l.Path, kit.OrNone(appRole[l.App]), recordNamed(l.RecordID, l.RecordKey),
				l.At.Sub(deadline).Round(time.Millisecond)))
		}
	}
	return sc.St.On("traffic.lease.writes-after-deadline").Equal(fmt.Sprintf("writes of %s after its lease deadline %s", name, deadline.Format(time.RFC3339Nano)), "(none)", kit.OrNone(strings.Join(late, "; ")))
}

// heartbeatsPerInterval bounds a process's heartbeat PUTs by the contract's lease monitor
// (product-contract §3.7: "heartbeat every heartbeat_interval_sec and also before each
// ordinary write"): one per interval of the time it held its lease, from its first lease
// write (the lock's acquisition) to its last request through the proxy (the release), one
// more for a tick that lands on the release, and one before each of its other record writes
// (every record write but the heartbeats and the lock's own acquisition and release, which
// touch lease_token). The bound follows the run's own length and writes, so it holds on a
// fast and a slow tenant alike, and a lease monitor that renews more often than its
// interval exceeds it (m7-03). The real FlowNet 1.0.0 ticks before the Run's start, before
// each node and before each aggregate write, fewer than the bound allows.
func (faultTrafficDomain) heartbeatsPerInterval(ctx context.Context, name string, every int) error {
	sc := kit.SceneOf(ctx)
	p, err := EndedProxy(ctx, name, "its heartbeats are not final")
	if err != nil {
		return err
	}
	var first, last time.Time
	writes := 0
	for _, l := range p.Traffic() {
		if first.IsZero() && l.Status/100 == 2 && slices.Contains(l.Fields, "lease_expires_at") {
			first = l.At
		}
		if l.At.After(last) {
			last = l.At
		}
		if l.Method != "GET" && !l.Heartbeat && !slices.Contains(l.Fields, "lease_token") && faultproxy.IsRecordsPath(l.Path) {
			writes++
		}
	}
	if first.IsZero() {
		return fmt.Errorf("no lease write of %q passed its fault proxy", name)
	}
	held := last.Sub(first)
	timer := int(held/(time.Duration(every)*time.Second)) + 1
	limit := timer + writes
	n := p.Counts().Heartbeat
	sc.St.Note("lease of "+name, fmt.Sprintf("held %s through the proxy, %d heartbeats (at most %d: %d at one per %d s plus one, %d before its other record writes)",
		held.Round(time.Millisecond), n, limit, timer, every, writes))
	return sc.St.On("traffic.lease.heartbeats", "state.NETWORK_LOCK.heartbeat_at").Assert(fmt.Sprintf("heartbeats of %s per %d s of its lease and per other record write", name, every), fmt.Sprintf("1..%d", limit), n, n >= 1 && n <= limit)
}

// leaseNeverRanOut: while the process ran, its lease never ran out (product-contract §3.7:
// the lease monitor renews it every heartbeat_interval_sec, well inside the lease): the
// longest time from one of its 2xx lease writes (the acquisition, a heartbeat) to the next,
// or from the last one to its last request through the proxy (the release), is shorter than
// the lease. The process must have ended.
func (faultTrafficDomain) leaseNeverRanOut(ctx context.Context, lease int, name string) error {
	sc := kit.SceneOf(ctx)
	p, err := EndedProxy(ctx, name, "its lease writes are not final")
	if err != nil {
		return err
	}
	lines := p.Traffic()
	var writes []time.Time
	var last time.Time
	for _, l := range lines {
		if l.Status/100 == 2 && slices.Contains(l.Fields, "lease_expires_at") {
			writes = append(writes, l.At)
		}
		if l.At.After(last) {
			last = l.At
		}
	}
	if len(writes) == 0 {
		return fmt.Errorf("no lease write of %q passed its fault proxy", name)
	}
	slices.SortFunc(writes, func(a, b time.Time) int { return a.Compare(b) })
	writes = append(writes, last)
	var longest time.Duration
	for i := 1; i < len(writes); i++ {
		if g := writes[i].Sub(writes[i-1]); g > longest {
			longest = g
		}
	}
	limit := time.Duration(lease) * time.Second
	return sc.St.On("traffic.lease.heartbeats", "state.NETWORK_LOCK.lease_expires_at").Assert(fmt.Sprintf("longest time %s went without renewing its lease", name), "less than "+limit.String(), longest.Round(time.Millisecond).String(), longest < limit)
}
