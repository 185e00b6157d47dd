package steps

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/ksqlflow/flowtest/harness/apicount"
	"github.com/ksqlflow/flowtest/harness/faultproxy"
	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/harness/wait"
	"github.com/ksqlflow/flowtest/results"
)

// faultDomain: a fault proxy between one named FlowNet process (and the children that
// inherit its base URL, e.g. a poller's runs) and kintone. Feature text declares the proxy
// before the process starts, switches its mode, and holds single requests at barriers that
// it waits for and releases. kSQL-Flow never passes these proxies (at most the scope's own
// kSQL-Flow proxy, windows.go, which holds a read but never blocks): only FlowNet's traffic does.
type faultDomain struct{}

func (d faultDomain) register(reg stepdef.Registry) {
	reg.Step(`^the kintone traffic of "([^"]+)" goes through a fault proxy$`, d.trafficGoesThroughAProxy)
	reg.Step(`^the fault proxy of "([^"]+)" (passes everything|blocks everything|blocks writes)$`, d.switchMode)
	reg.Step(`^barrier "([^"]+)" in the fault proxy of "([^"]+)" holds the (GET|POST|PUT|DELETE) of (record|records) in the (state|audit|request) app (before it is sent|after it succeeded)(?: when it carries "([^"]+)")?$`, d.addBarrier)
	reg.Step(`^barrier "([^"]+)" in the fault proxy of "([^"]+)" holds the PUT of `+reqRef+` in the request app (before it is sent|after it succeeded) when it carries "([^"]+)"$`, d.addRequestBarrier)
	reg.Step(`^barrier "([^"]+)" is reached$`, d.barrierIsReached)
	reg.Step(`^barrier "([^"]+)" is released$`, d.releaseBarrier)
	reg.Step(`^on (the sandbox|a live target), the kintone calls counted by the fault proxies are within:$`, d.callsWithinOn)
	reg.Step(`^"([^"]+)" sent at most one heartbeat per (\d+) s of its lease, plus one$`, d.heartbeatsPerInterval)
	reg.Step(`^the fault proxy of "([^"]+)" has dropped at least (\d+) requests?$`, d.droppedAtLeast)
	reg.Step(`^the fault proxy of "([^"]+)" passes everything again when at most (\d+) s of the (\d+) s lease it last carried are left$`, d.passBeforeLeaseDeadline)
	reg.Step(`^the kSQL-Flow child of that attempt finishes on its own and its JOB log row is "([^"]+)"$`, d.childFinishesCutOff)
	reg.Step(`^the kSQL-Flow child of that attempt finishes on its own and its JOB log row has a terminal status$`, d.childFinishesCutOffTerminal)
	reg.Step(`^no write of "([^"]+)" reached its fault proxy after the (\d+) s lease it last carried ran out$`, d.noWriteAfterLease)
}

// faultState: the proxies of the scenario by process name, and its barriers by name.
type faultState struct {
	planned  map[string]bool
	proxies  map[string]*faultproxy.Proxy
	barriers map[string]*barrierEntry
	// pending are barriers declared for a planned process before it started: installed in
	// its proxy when the proxy starts, before the process sends anything (a poller claims
	// within milliseconds of its start, too soon for a barrier added afterwards).
	pending map[string][]faultproxy.Barrier
	// pendingMode is a mode set for a planned process before it started, likewise.
	pendingMode map[string]faultproxy.Mode
}

type barrierEntry struct {
	name, id, process string
	reached           bool
	releasedAt        time.Time // when the scenario let the held request go (zero: never)
	// proxy is set for a barrier of a proxy that belongs to no single named process (the
	// scope's kSQL-Flow proxy, windows.go); ended then says when nothing can arrive any more.
	proxy *faultproxy.Proxy
	ended func() (why string, done bool)
}

var faultKey = scenario.NewKey[faultState]("faults")

var modesByText = map[string]faultproxy.Mode{
	"passes everything": faultproxy.ModePass,
	"blocks everything": faultproxy.ModeBlock,
	"blocks writes":     faultproxy.ModeBlockWrites,
}

func (faultDomain) trafficGoesThroughAProxy(ctx context.Context, name string) error {
	fs := faultKey.Of(scenario.From(ctx))
	if processesOf(ctx).started(name) {
		return fmt.Errorf("%q has already started: declare its fault proxy before it starts", name)
	}
	if fs.planned == nil {
		fs.planned = map[string]bool{}
	}
	fs.planned[name] = true
	return nil
}

// proxyEnvFor starts the proxy planned for the FlowNet process name, if any, and returns the
// environment that points the process at it: base URL and a CA bundle holding the target's CA
// and the proxy's. It is called by startFlowNet.
func proxyEnvFor(ctx context.Context, name string) ([]string, error) {
	sc := sceneOf(ctx)
	fs := faultKey.Of(sc.st)
	if !fs.planned[name] && !explored(sc.st, name) { // an explored process always has one (explore.go)
		return countingProxyEnv(sc) // counted all the same (apiproxy.go)
	}
	dir := filepath.Join(sc.st.WorkDir, "proxy-"+procFileName(name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The original hook's control file (scenarios.md §5: pass | block | block-writes, or the
	// JSON {mode, barriers}) steers this proxy too, for an operator during a live run: it is
	// fault-control.txt in the proxy's directory (kept with --keep-workdirs), re-read on every
	// request; as long as nobody creates it, the steps' modes and barriers rule alone.
	control := filepath.Join(dir, "fault-control.txt")
	opts, bundle, err := scenarioProxyOptions(sc, procFileName(name), dir, apicount.FlowNet)
	if err != nil {
		return nil, err
	}
	opts.ControlFile = control
	p, err := faultproxy.New(opts)
	if err != nil {
		return nil, fmt.Errorf("fault proxy for %q: %w", name, err)
	}
	if fs.proxies == nil {
		fs.proxies = map[string]*faultproxy.Proxy{}
	}
	fs.proxies[name] = p
	if g := exploredGate(sc.st, name); g != nil {
		p.SetGate(g)
	}
	for _, b := range fs.pending[name] {
		if err := p.AddBarrier(b); err != nil {
			return nil, fmt.Errorf("barrier %s of %q: %w", b.ID, name, err)
		}
	}
	delete(fs.pending, name)
	if err := installPendingFaults(sc.st, name, p); err != nil {
		return nil, err
	}
	if m, ok := fs.pendingMode[name]; ok {
		if err := p.SetMode(m); err != nil {
			return nil, fmt.Errorf("fault proxy of %q: %w", name, err)
		}
		delete(fs.pendingMode, name)
	}
	st := sc.st
	st.Defer("close the fault proxy of "+name, func(context.Context) error {
		err := closeAndRecord(st, name, p)
		recordFaultFirings(st, sc, name, p)
		return err
	})
	env := flownetProxyEnv(p, bundle)
	fmt.Fprintf(st.Log, "  fault proxy for %q at %s (control file %s)\n", name, p.URL(), control)
	return env, nil
}

// closeAndRecord closes a proxy of the scenario and puts what it saw into the record under
// name: its counts, every request, each barrier arrival and, for a barrier the scenario
// released, the end of its hold (the record shows At..ReleasedAt).
func closeAndRecord(st *scenario.State, name string, p *faultproxy.Proxy) error {
	err := p.Close()
	st.AddTraffic(trafficCounts(name, p.Counts()))
	st.AddTrafficLog(trafficLines(name, p.Traffic()))
	byID := map[string]*barrierEntry{}
	for _, b := range faultKey.Of(st).barriers {
		byID[b.id] = b
	}
	arrived := map[string]bool{}
	for _, a := range p.Arrivals() {
		arrived[a.BarrierID] = true
		rec := results.BarrierArrival{ID: a.BarrierID, Process: name, Phase: string(a.Phase), Method: a.Method, Path: a.Path, Status: a.ResponseStatus, At: a.At}
		if b := byID[a.BarrierID]; b != nil {
			rec.Name = b.name
			if b.process != "" {
				rec.Process = b.process
			}
		}
		st.AddBarrierArrival(rec)
	}
	for _, b := range faultKey.Of(st).barriers {
		if arrived[b.id] && !b.releasedAt.IsZero() {
			st.ReleaseBarrier(b.id, b.releasedAt)
		}
	}
	return err
}

// trafficLines are a proxy's logged requests for the scenario record, under the process name.
func trafficLines(name string, lines []faultproxy.TrafficLine) []results.TrafficLine {
	out := make([]results.TrafficLine, len(lines))
	for i, l := range lines {
		out[i] = results.TrafficLine{Process: name, At: l.At, Method: l.Method, Path: l.Path, App: l.App, RecordID: l.RecordID,
			Fields: l.Fields, Blocked: l.Blocked, Heartbeat: l.Heartbeat, Status: l.Status, DurationMS: l.DurationMS, Error: l.Error}
	}
	return out
}

// trafficCounts names a proxy's counters for the scenario record.
func trafficCounts(name string, c faultproxy.Counts) map[string]int {
	prefix := procFileName(name) + "."
	out := map[string]int{prefix + "total": c.Total, prefix + "blocked": c.Blocked, prefix + "file": c.File,
		prefix + "other": c.Other, prefix + "heartbeat": c.Heartbeat, prefix + "barrier_timeouts": c.BarrierTimeouts,
		prefix + "upstream_errors": c.UpstreamErrors}
	methods := slices.Sorted(maps.Keys(c.Records))
	for _, m := range methods {
		out[prefix+"records."+m] = c.Records[m]
	}
	return out
}

// endedProxy returns the proxy of a process that has exited: its counts and traffic are final.
func endedProxy(ctx context.Context, name, why string) (*faultproxy.Proxy, error) {
	p, err := proxyOf(ctx, name)
	if err != nil {
		return nil, err
	}
	proc, err := processesOf(ctx).resolve(`"` + name + `"`)
	if err != nil {
		return nil, err
	}
	if _, done := proc.proc.Exited(); !done {
		return nil, fmt.Errorf("%q is still running: %s", name, why)
	}
	return p, nil
}

func proxyOf(ctx context.Context, name string) (*faultproxy.Proxy, error) {
	p, ok := faultKey.Of(scenario.From(ctx)).proxies[name]
	if !ok {
		return nil, fmt.Errorf("%q has no fault proxy (declare it with: the kintone traffic of %q goes through a fault proxy, before it starts)", name, name)
	}
	return p, nil
}

func (faultDomain) switchMode(ctx context.Context, name, mode string) error {
	fs := faultKey.Of(scenario.From(ctx))
	p, err := proxyOf(ctx, name)
	switch {
	case err != nil && !fs.planned[name]:
		return err
	case err != nil: // planned, not started yet: set when its proxy starts
		if fs.pendingMode == nil {
			fs.pendingMode = map[string]faultproxy.Mode{}
		}
		fs.pendingMode[name] = modesByText[mode]
	default:
		if err := p.SetMode(modesByText[mode]); err != nil {
			return err
		}
	}
	sceneOf(ctx).st.Note("fault proxy of "+name, "mode "+string(modesByText[mode]))
	return nil
}

// roleOfApp maps the feature's app names to target roles: never a raw app id in a feature.
var roleOfApp = map[string]string{"state": target.RoleState, "audit": target.RoleAudit, "request": target.RoleRequest}

func (faultDomain) addBarrier(ctx context.Context, name, process, method, endpoint, app, phase, field string) error {
	return installBarrier(ctx, name, process, method, endpoint, app, phase, field, "")
}

// addRequestBarrier holds the PUT of one request record (matched by its $id, the body's
// top-level "id"): the claim of exactly that request, not of another one the poller sees.
func (faultDomain) addRequestBarrier(ctx context.Context, name, process, ref, phase, field string) error {
	m, err := requestsOf(ctx).find(ref)
	if err != nil {
		return err
	}
	return installBarrier(ctx, name, process, "PUT", "record", "request", phase, field, m.id)
}

// installBarrier installs (or plans, for a process not started yet) one barrier; recordID,
// when given, must equal the body's top-level "id".
func installBarrier(ctx context.Context, name, process, method, endpoint, app, phase, field, recordID string) error {
	sc := sceneOf(ctx)
	if liftBarrier(sc.st, name, process) { // explore.go
		return nil
	}
	fs := faultKey.Of(sc.st)
	p, err := proxyOf(ctx, process)
	if err != nil && !fs.planned[process] {
		return err
	}
	if err := fs.unused(name); err != nil {
		return err
	}
	appID := sc.app(roleOfApp[app])
	if appID == "" {
		return fmt.Errorf("barrier %q: the target has no %s app", name, app)
	}
	b := faultproxy.Barrier{
		ID:    fixturesOf(ctx).scope().BarrierID(name),
		Phase: faultproxy.PhaseBefore,
		Match: faultproxy.Match{Path: `/k/v1/` + regexp.QuoteMeta(endpoint+".json") + `$`, Method: method,
			Body: &faultproxy.BodyMatch{App: appID, ID: recordID, Field: field}},
	}
	if phase == "after it succeeded" {
		b.Phase = faultproxy.PhaseAfterSuccess
	}
	if p == nil { // planned, not started yet: installed when its proxy starts
		if fs.pending == nil {
			fs.pending = map[string][]faultproxy.Barrier{}
		}
		fs.pending[process] = append(fs.pending[process], b)
	} else if err := p.AddBarrier(b); err != nil {
		return fmt.Errorf("barrier %q: %w", name, err)
	}
	return fs.addBarrier(&barrierEntry{name: name, id: b.ID, process: process})
}

// isPlanned: the process was declared to go through a fault proxy (it may not have started).
func (fs *faultState) isPlanned(name string) bool { return fs.planned[name] }

// unused refuses a barrier name the scenario already installed.
func (fs *faultState) unused(name string) error {
	if _, dup := fs.barriers[name]; dup {
		return fmt.Errorf("barrier %q is already installed", name)
	}
	return nil
}

// addBarrier registers an installed barrier under its name for the barrier steps; the
// scope's kSQL-Flow proxy (windows.go) registers its holds here too.
func (fs *faultState) addBarrier(e *barrierEntry) error {
	if err := fs.unused(e.name); err != nil {
		return err
	}
	if fs.barriers == nil {
		fs.barriers = map[string]*barrierEntry{}
	}
	fs.barriers[e.name] = e
	return nil
}

func barrierOf(ctx context.Context, name string) (*barrierEntry, *faultproxy.Proxy, error) {
	b, ok := faultKey.Of(scenario.From(ctx)).barriers[name]
	if err := liftedError(scenario.From(ctx), name); err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, fmt.Errorf("no barrier %q was installed", name)
	}
	if b.proxy != nil {
		return b, b.proxy, nil
	}
	p, err := proxyOf(ctx, b.process)
	return b, p, err
}

// barrierIsReached waits (bounded) until the barrier holds a request. It stops early when the
// process behind the proxy has exited: nothing can arrive any more.
func (faultDomain) barrierIsReached(ctx context.Context, name string) error {
	sc := sceneOf(ctx)
	if lifted(sc.st, name) {
		return nil
	}
	b, p, err := barrierOf(ctx, name)
	if err != nil {
		return err
	}
	ended := b.ended
	if ended == nil {
		proc, err := processesOf(ctx).resolve(`"` + b.process + `"`)
		if err != nil {
			return err
		}
		ended = func() (string, bool) {
			if res, done := proc.proc.Exited(); done {
				return fmt.Sprintf("%q exited (%s)", b.process, res), true
			}
			return "", false
		}
	}
	var seen faultproxy.Arrival
	err = wait.For(ctx, wait.BarrierArrival, "barrier "+name+" to hold a request", func(ctx context.Context) (bool, string, error) {
		for _, a := range p.Arrivals() {
			if a.BarrierID == b.id {
				seen = a
				return true, "held " + a.Method + " " + a.Path, nil
			}
		}
		if why, done := ended(); done {
			return false, "", wait.Permanent(fmt.Errorf("%s before barrier %s was reached", why, name))
		}
		return false, "not yet", nil
	})
	if err != nil {
		return err
	}
	b.reached = true
	return sc.st.Equal("barrier "+name+" held request", b.id, seen.BarrierID)
}

func (faultDomain) releaseBarrier(ctx context.Context, name string) error {
	if lifted(scenario.From(ctx), name) {
		return nil
	}
	b, p, err := reachedBarrier(ctx, name)
	if err != nil {
		return err
	}
	return b.release(p)
}

// reachedBarrier is a barrier the scenario may release: installed, and seen holding a request.
func reachedBarrier(ctx context.Context, name string) (*barrierEntry, *faultproxy.Proxy, error) {
	b, p, err := barrierOf(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if !b.reached {
		return nil, nil, fmt.Errorf("barrier %q was not reached yet: wait for it first (barrier %q is reached)", name, name)
	}
	return b, p, nil
}

// release lets the held request go and notes when: the record shows the hold as At..ReleasedAt.
func (b *barrierEntry) release(p *faultproxy.Proxy) error {
	if err := p.Release(b.id); err != nil {
		return err
	}
	b.releasedAt = time.Now()
	return nil
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
func (faultDomain) callsWithin(ctx context.Context, table *godog.Table) error {
	sc := sceneOf(ctx)
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
		p, err := endedProxy(ctx, name, "its call counts are not final")
		if err != nil {
			return err
		}
		c := p.Counts()
		sc.st.Note("kintone calls of "+name, countSummary(c))
		for i, cell := range row.Cells[1:] {
			col, want := header[i+1].Value, strings.TrimSpace(cell.Value)
			if want == "" {
				continue
			}
			lo, hi, err := parseBound(want)
			if err != nil {
				return fmt.Errorf("call table, %s of %s: %w", col, name, err)
			}
			n := countColumns[col](c)
			if err := sc.st.Assert(fmt.Sprintf("%s calls of %s", col, name), want, n, n >= lo && (hi < 0 || n <= hi)); err != nil {
				return err
			}
		}
	}
	return nil
}

// callsWithinOn applies a call table on one kind of target only: the sandbox keeps a tight
// regression budget of our own counts, a live target the bounds the original set (a real
// FlowNet may spend calls differently within the contract). The table of the other kind of
// target is noted as not applied.
func (d faultDomain) callsWithinOn(ctx context.Context, where string, table *godog.Table) error {
	sc := sceneOf(ctx)
	sandbox := sc.suite.Target.Name == "sandbox"
	if sandbox != (where == "the sandbox") {
		sc.st.Note("call budget for "+where, "not applied on the "+sc.suite.Target.Name+" target")
		return nil
	}
	return d.callsWithin(ctx, table)
}

// countSummary is one proxy's counters on one line, for the record's notes.
func countSummary(c faultproxy.Counts) string {
	return fmt.Sprintf("total=%d blocked=%d records GET=%d POST=%d PUT=%d file=%d other=%d heartbeat=%d",
		c.Total, c.Blocked, c.Records["GET"], c.Records["POST"], c.Records["PUT"], c.File, c.Other, c.Heartbeat)
}

// droppedAtLeast waits (bounded) until the proxy of the named process has dropped n requests
// in block mode — FlowNet's heartbeats and drain retries during an outage — and notes how
// many it dropped by then. It stops early when the process has exited.
func (faultDomain) droppedAtLeast(ctx context.Context, name string, n int) error {
	sc := sceneOf(ctx)
	p, err := proxyOf(ctx, name)
	if err != nil {
		return err
	}
	proc, err := processesOf(ctx).resolve(`"` + name + `"`)
	if err != nil {
		return err
	}
	seen := 0
	err = wait.For(ctx, wait.BlockedRequests, fmt.Sprintf("the fault proxy of %s to drop %d requests", name, n), func(ctx context.Context) (bool, string, error) {
		seen = p.Counts().Blocked
		if seen >= n {
			return true, fmt.Sprintf("%d dropped", seen), nil
		}
		if res, done := proc.proc.Exited(); done {
			return false, "", wait.Permanent(fmt.Errorf("%q exited (%s) after %d dropped requests", name, res, seen))
		}
		return false, fmt.Sprintf("%d dropped", seen), nil
	})
	if err != nil {
		return err
	}
	sc.st.Note("dropped requests of "+name, countSummary(p.Counts()))
	return sc.st.Assert("requests dropped by the fault proxy of "+name, fmt.Sprintf("at least %d", n), seen, seen >= n)
}

// childFinishesCutOff waits (bounded) for the JOB log row of the attempt the last "has a
// RUNNING attempt" step found to leave RUNNING: kSQL-Flow's traffic does not pass FlowNet's
// proxy (at most the scope's kSQL-Flow proxy, windows.go), so an outage of FlowNet's traffic
// must not touch it. The harness reads the JOB log directly.
func (faultDomain) childFinishesCutOff(ctx context.Context, status string) error {
	sc := sceneOf(ctx)
	node, att, err := killKey.Of(sc.st).runningAttempt()
	if err != nil {
		return err
	}
	var row jobLogRow
	err = wait.For(ctx, wait.JobLogTerminal, "the JOB log row of attempt "+att.NodeAttemptID+" to leave RUNNING", func(ctx context.Context) (bool, string, error) {
		rows, err := readExact(ctx, sc, target.RoleLog, decodeJobLogRow, match{"attempt_id", att.NodeAttemptID})
		if err != nil {
			return false, "", err
		}
		if len(rows) != 1 {
			return false, fmt.Sprintf("%d JOB log rows", len(rows)), nil
		}
		row = rows[0]
		return row.Status != "RUNNING" && row.Status != "", "JOB log " + orNone(row.Status), nil
	})
	if err != nil {
		return err
	}
	return jobLogStatusIs(sc, "JOB log status of the attempt of "+node+" while FlowNet was cut off", status, row.Status)
}

// childFinishesCutOffTerminal is childFinishesCutOff accepting any terminal status (the
// original's acceptance where the child's own end is not what the scenario proves).
func (d faultDomain) childFinishesCutOffTerminal(ctx context.Context) error {
	return d.childFinishesCutOff(ctx, anyTerminal)
}

// passBeforeLeaseDeadline ends an outage close to, but before, the lease deadline (the
// original unblocked 26 s into a 30 s lease): the deadline is the time of the last lease
// write that passed the proxy with a 2xx (the lock's acquisition or a heartbeat: a request
// touching lease_expires_at) plus the lease the feature names (the fixture's). It waits until
// at most left seconds remain, checks that the deadline has not passed, and switches to pass.
func (faultDomain) passBeforeLeaseDeadline(ctx context.Context, name string, left, lease int) error {
	sc := sceneOf(ctx)
	p, err := proxyOf(ctx, name)
	if err != nil {
		return err
	}
	last, deadline, err := leaseDeadlineOf(name, p.Traffic(), lease)
	if err != nil {
		return err
	}
	switchAt := deadline.Add(-time.Duration(left) * time.Second)
	err = wait.For(ctx, wait.LeaseExpiry, fmt.Sprintf("%d s before the lease deadline of %s", left, name), func(ctx context.Context) (bool, string, error) {
		now := time.Now()
		return !now.Before(switchAt), fmt.Sprintf("%s to the lease deadline", deadline.Sub(now).Round(time.Second)), nil
	})
	if err != nil {
		return err
	}
	if err := p.SetMode(faultproxy.ModePass); err != nil {
		return err
	}
	now := time.Now()
	sc.st.Note("fault proxy of "+name, fmt.Sprintf("mode pass %s before the lease deadline (last lease write %s, %s dropped)",
		deadline.Sub(now).Round(time.Millisecond), last.Format(time.RFC3339Nano), fmt.Sprint(p.Counts().Blocked)))
	return sc.st.Assert("outage of "+name+" ended before the lease deadline", "before "+deadline.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano), now.Before(deadline))
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
func (faultDomain) noWriteAfterLease(ctx context.Context, name string, lease int) error {
	sc := sceneOf(ctx)
	p, err := endedProxy(ctx, name, "wait for its exit first")
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
		if id := sc.app(role); id != "" {
			appRole[id] = role // never a raw app id in the record
		}
	}
	var late []string
	for _, l := range lines {
		if l.Method != "GET" && l.At.After(deadline) {
			late = append(late, fmt.Sprintf("%s %s %s app record %s, %s after the deadline", l.Method, l.Path, orNone(appRole[l.App]), l.RecordID,
				l.At.Sub(deadline).Round(time.Millisecond)))
		}
	}
	return sc.st.Equal(fmt.Sprintf("writes of %s after its lease deadline %s", name, deadline.Format(time.RFC3339Nano)), "(none)", orNone(strings.Join(late, "; ")))
}

// heartbeatsPerInterval bounds a process's heartbeat PUTs by how long it held its lease: from
// its first lease write (the lock's acquisition) to its last request through the proxy (the
// release), one heartbeat per interval and one more for a tick that lands on the release.
// The bound follows the run's own length, so it holds on a fast and a slow tenant alike,
// and a lease monitor that renews more often than its interval exceeds it (m7-03).
func (faultDomain) heartbeatsPerInterval(ctx context.Context, name string, every int) error {
	sc := sceneOf(ctx)
	p, err := endedProxy(ctx, name, "its heartbeats are not final")
	if err != nil {
		return err
	}
	var first, last time.Time
	for _, l := range p.Traffic() {
		if first.IsZero() && l.Status/100 == 2 && slices.Contains(l.Fields, "lease_expires_at") {
			first = l.At
		}
		if l.At.After(last) {
			last = l.At
		}
	}
	if first.IsZero() {
		return fmt.Errorf("no lease write of %q passed its fault proxy", name)
	}
	held := last.Sub(first)
	limit := int(held/(time.Duration(every)*time.Second)) + 1
	n := p.Counts().Heartbeat
	sc.st.Note("lease of "+name, fmt.Sprintf("held %s through the proxy, %d heartbeats (at most %d at one per %d s)", held.Round(time.Millisecond), n, limit, every))
	return sc.st.Assert(fmt.Sprintf("heartbeats of %s per %d s of its lease", name, every), fmt.Sprintf("1..%d", limit), n, n >= 1 && n <= limit)
}

// releasedAt is when the scenario let barrier name's held request go (an error if it never did).
func (fs *faultState) releasedAt(name string) (time.Time, error) {
	b, ok := fs.barriers[name]
	switch {
	case !ok:
		return time.Time{}, fmt.Errorf("no barrier %q was installed", name)
	case b.releasedAt.IsZero():
		return time.Time{}, fmt.Errorf("barrier %q was never released", name)
	}
	return b.releasedAt, nil
}
