package proxy

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/results"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// selectiveFaultDomain: selective faults in the fault proxy of a named FlowNet process
// (faults.go's proxies): one kind of request — method, endpoint, app by role, a field the
// record carries — answered with a kintone error without being forwarded, forwarded with
// its response lost, or reset before it is sent; once, n times or always. Like
// barriers, a fault is declared before its process starts (installed when its proxy starts,
// before the first request) or added to a running proxy. Every firing goes to the scenario
// record (`faults`) when the proxy closes.
type selectiveFaultDomain struct{}

// faultTarget is the request part every fault phrase shares, and how often it fires.
const faultTarget = `the (GET|POST|PUT|DELETE) of (record|records) in the (state|audit|request) app(?: when it carries "([^"]+)")?`
const faultTimes = `(once|\d+ times|always)`

func (d selectiveFaultDomain) register(reg stepdef.Registry) {
	reg.Step(`^fault "([^"]+)" in the fault proxy of "([^"]+)" answers `+faultTarget+` with (\d{3})(?: ([A-Z]+_[A-Z0-9]+))?, `+faultTimes+`$`, d.answers)
	reg.Step(`^fault "([^"]+)" in the fault proxy of "([^"]+)" answers `+faultTarget+` with 400 CB_VA01 naming "([a-z0-9_]+)" as a duplicate, `+faultTimes+`$`, d.answersDuplicate)
	reg.Step(`^fault "([^"]+)" in the fault proxy of "([^"]+)" (loses the response of|resets) `+faultTarget+`, `+faultTimes+`$`, d.losesOrResets)
	reg.Step(`^fault "([^"]+)" fired (exactly once|exactly \d+ times|at least once)$`, d.firedTimes)
	reg.Step(`^the traffic log of "([^"]+)" shows the request fault "([^"]+)" took, answered (\d{3})$`, d.trafficShowsFault)
}

// selectiveFaultState: the faults of the scenario by name, and those declared for a process
// whose proxy has not started yet.
type selectiveFaultState struct {
	faults  map[string]*faultEntry
	pending map[string][]faultproxy.Fault
}

type faultEntry struct {
	name, id, process string
	action            faultproxy.Action
}

var selectiveFaultKey = scenario.NewKey[selectiveFaultState]("selective-faults")

var actionsByText = map[string]faultproxy.Action{
	"loses the response of": faultproxy.ActionLoseResponse,
	"resets":                faultproxy.ActionReset,
}

func (d selectiveFaultDomain) answers(ctx context.Context, name, process, method, endpoint, app, field string, status int, code, times string) error {
	return AddFault(ctx, name, process, method, endpoint, app, field, times, faultproxy.Fault{Action: faultproxy.ActionRespond, Status: status, Code: code})
}

// answersDuplicate answers as kintone does the second INSERT of one unique value: 400 CB_VA01
// whose errors name the unique field (kintone-api.md), which need not be the field the fault
// matches the request by.
func (d selectiveFaultDomain) answersDuplicate(ctx context.Context, name, process, method, endpoint, app, field, unique, times string) error {
	errs := map[string][]string{"record." + unique + ".value": {faultproxy.DuplicateMessage}}
	return AddFault(ctx, name, process, method, endpoint, app, field, times, faultproxy.Fault{Action: faultproxy.ActionRespond, Status: 400, Code: "CB_VA01", Errors: errs})
}

func (d selectiveFaultDomain) losesOrResets(ctx context.Context, name, process, action, method, endpoint, app, field, times string) error {
	return AddFault(ctx, name, process, method, endpoint, app, field, times, faultproxy.Fault{Action: actionsByText[action]})
}

// parseTimes reads "once", "<n> times" or "always".
func parseTimes(s string) (int, error) {
	switch s {
	case "once":
		return 1, nil
	case "always":
		return faultproxy.Always, nil
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, " times"))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("fault count %q: want once, <n> times (n ≥ 1) or always", s)
	}
	return n, nil
}

// AddFault completes f with its id, matcher and count and installs it in the process's
// proxy, or keeps it until that proxy starts (the process is planned, not started).
func AddFault(ctx context.Context, name, process, method, endpoint, app, field, times string, f faultproxy.Fault) error {
	sc := kit.SceneOf(ctx)
	ss := selectiveFaultKey.Of(sc.St)
	if _, dup := ss.faults[name]; dup {
		return fmt.Errorf("fault %q is already installed", name)
	}
	n, err := parseTimes(times)
	if err != nil {
		return err
	}
	appID := sc.App(roleOfApp[app])
	if appID == "" {
		return fmt.Errorf("fault %q: the target has no %s app", name, app)
	}
	f.ID = kit.FixturesOf(ctx).Scope().BarrierID("fault_" + name)
	f.Times = n
	f.Match = faultproxy.FaultMatch{Method: method, Path: `/k/v1/` + regexp.QuoteMeta(endpoint+".json") + `$`, App: appID, Field: field}
	p, perr := proxyOf(ctx, process)
	switch {
	case perr == nil:
		if err := p.AddFault(f); err != nil {
			return fmt.Errorf("fault %q: %w", name, err)
		}
	case faultKey.Of(sc.St).isPlanned(process):
		if ss.pending == nil {
			ss.pending = map[string][]faultproxy.Fault{}
		}
		ss.pending[process] = append(ss.pending[process], f)
	default:
		return perr
	}
	if ss.faults == nil {
		ss.faults = map[string]*faultEntry{}
	}
	ss.faults[name] = &faultEntry{name: name, id: f.ID, process: process, action: f.Action}
	return nil
}

// installPendingFaults arms the faults declared for process before its proxy started; the
// proxy has not passed a request yet. faults.go calls it when it starts the proxy.
func installPendingFaults(st *scenario.State, process string, p *faultproxy.Proxy) error {
	ss := selectiveFaultKey.Of(st)
	for _, f := range ss.pending[process] {
		if err := p.AddFault(f); err != nil {
			return fmt.Errorf("fault %s of %q: %w", f.ID, process, err)
		}
	}
	delete(ss.pending, process)
	return nil
}

// recordFaultFirings puts what the faults of process's proxy did into the scenario record,
// under the faults' feature names and the apps' roles (never an app id). faults.go calls it
// when it closes the proxy.
func recordFaultFirings(st *scenario.State, sc *kit.Scene, process string, p *faultproxy.Proxy) {
	byID := map[string]string{}
	for _, e := range selectiveFaultKey.Of(st).faults {
		if e.process == process {
			byID[e.id] = e.name
		}
	}
	roles := map[string]string{}
	for feature, role := range roleOfApp {
		if id := sc.App(role); id != "" {
			roles[id] = feature
		}
	}
	var out []results.FaultFiring
	for _, f := range p.Firings() {
		name := byID[f.FaultID]
		if name == "" {
			name = f.FaultID // a fault of the control file
		}
		out = append(out, f.Record(name, process, roles[f.App]))
	}
	if len(out) > 0 {
		st.AddFaultFirings(out...)
	}
}

func faultOf(ctx context.Context, name string) (*faultEntry, *faultproxy.Proxy, error) {
	e, ok := selectiveFaultKey.Of(scenario.From(ctx)).faults[name]
	if !ok {
		return nil, nil, fmt.Errorf("no fault %q was installed", name)
	}
	p, err := proxyOf(ctx, e.process)
	return e, p, err
}

// firedTimes: the process has ended, and its fault took as many requests as the feature
// says, each acted on (no firing with an error). Every firing is noted with the request it
// took.
func (selectiveFaultDomain) firedTimes(ctx context.Context, name, times string) error {
	sc := kit.SceneOf(ctx)
	e, _, err := faultOf(ctx, name)
	if err != nil {
		return err
	}
	p, err := EndedProxy(ctx, e.process, "its fault firings are not final")
	if err != nil {
		return err
	}
	fs := p.FaultFirings(e.id)
	var lines, failed []string
	for _, f := range fs {
		lines = append(lines, firingText(f))
		if f.Error != "" {
			failed = append(failed, f.Error)
		}
	}
	sc.St.Note("firings of fault "+name+" in the fault proxy of "+e.process, kit.OrNone(strings.Join(lines, "; ")))
	n := len(fs)
	switch times {
	case "at least once":
		err = sc.St.On("harness.fault.firings").Assert("firings of fault "+name, "at least 1", n, n >= 1)
	case "exactly once":
		err = sc.St.On("harness.fault.firings").Equal("firings of fault "+name, 1, n)
	default:
		want, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(times, "exactly "), " times"))
		err = sc.St.On("harness.fault.firings").Equal("firings of fault "+name, want, n)
	}
	if err != nil {
		return err
	}
	return sc.St.On("harness.fault.firings").Equal("firings of fault "+name+" that could not act", "(none)", kit.OrNone(strings.Join(failed, "; ")))
}

// firingText is one firing for a note: which match, the action, the request, the status.
func firingText(f faultproxy.Firing) string {
	s := fmt.Sprintf("match %d: %s %s %s record %s", f.Match, f.Action, f.Method, f.Path, recordNamed(f.RecordID, f.RecordKey))
	if f.Status != 0 {
		s += fmt.Sprintf(" status %d", f.Status)
	}
	if f.Error != "" {
		s += " error " + f.Error
	}
	return s
}

// trafficShowsFault: the process's own traffic log (what its proxy logged, as the process saw
// it) holds the request the fault took, with the status the process received — the proof, in
// the evidence a live gate keeps, that the product met the answer the scenario claims.
func (selectiveFaultDomain) trafficShowsFault(ctx context.Context, process, name string, status int) error {
	sc := kit.SceneOf(ctx)
	e, _, err := faultOf(ctx, name)
	if err != nil {
		return err
	}
	if e.process != process {
		return fmt.Errorf("fault %q is in the fault proxy of %q, not of %q", name, e.process, process)
	}
	p, err := EndedProxy(ctx, process, "its traffic log is not final")
	if err != nil {
		return err
	}
	var took []string
	got := 0
	for _, l := range p.Traffic() {
		if l.Fault == e.id {
			took = append(took, fmt.Sprintf("%s %s %s: %d", l.At.UTC().Format("15:04:05.000"), l.Method, l.Path, l.Status))
			if got == 0 {
				got = l.Status
			}
		}
	}
	sc.St.Note("traffic lines of "+process+" taken by fault "+name, kit.OrNone(strings.Join(took, "; ")))
	if err := sc.St.On("traffic.fault.taken").Assert("traffic lines of "+process+" taken by fault "+name, "at least 1", len(took), len(took) >= 1); err != nil {
		return err
	}
	return sc.St.On("traffic.fault.status").Equal("status "+process+" received for the request fault "+name+" took", status, got)
}
