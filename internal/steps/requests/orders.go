package requests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/operator"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
)

// orderDomain: orders of operator commands that only barriers can build (the CLOSE/STOP
// three-way order): the operator's STOP and CLOSE started in the background so their proxies
// can hold them, the Run's hold record read exactly, and the proof, from the fault proxies'
// traffic logs and the barriers' release times, that the scenario built the order it claims.
type orderDomain struct{}

func (d orderDomain) register(reg stepdef.Registry) {
	reg.Step(`^the operator requests a stop of the run in the background as "([^"]+)"$`, d.stopInTheBackground)
	reg.Step(`^the operator archives the run in the background as "([^"]+)"$`, d.archiveInTheBackground)
	reg.Step(`^the run's hold record is "(REQUESTED|ACCEPTED|RELEASED)"$`, d.holdRecordIs)
	reg.Step(`^the fault proxies saw the three-way order: "([^"]+)" read the run before "([^"]+)" wrote it terminal, then "([^"]+)" made its checks before barrier "([^"]+)" let the hold write go, and the hold was written before barrier "([^"]+)" let the ARCHIVED write go$`, d.threeWayOrder)
	reg.Step(`^barrier "([^"]+)" in the fault proxy of "([^"]+)" holds the PUT of `+reqRef+` in the request app (before it is sent|after it succeeded) when it carries "([^"]+)"$`, d.addRequestBarrier)
}

func (orderDomain) stopInTheBackground(ctx context.Context, name string) error {
	_, err := operator.StartCancelRun(ctx, name, false)
	return err
}

func (orderDomain) archiveInTheBackground(ctx context.Context, name string) error {
	_, err := startOperatorArchive(ctx, name)
	return err
}

// holdRecordIs reads the run's CANCEL_REQUEST record (there must be exactly one) and
// compares the state of its hold document.
func (orderDomain) holdRecordIs(ctx context.Context, want string) error {
	sc := kit.SceneOf(ctx)
	holds, id, err := kit.OfTheRun(ctx, target.RoleState, kit.DecodeHoldRecord, "CANCEL_REQUEST")
	if err != nil {
		return err
	}
	if err := sc.St.On("state.CANCEL_REQUEST.run_id").Equal("CANCEL_REQUEST records of run "+id, 1, len(holds)); err != nil {
		return err
	}
	return sc.St.On("state.CANCEL_REQUEST.status_reason").Equal("hold state of run "+id, want, kit.OrNone(holds[0].State))
}

// timedRequest is one logged request: when it reached the proxy and when its response left
// (a held request's end includes its hold).
type timedRequest struct {
	what       string
	arrived    time.Time
	ended      time.Time
	status     int
	recordID   string
	recordKey  string
	fieldNames []string
}

func timed(what string, l faultproxy.TrafficLine) timedRequest {
	return timedRequest{what: what, arrived: l.At, ended: l.At.Add(time.Duration(l.DurationMS * float64(time.Millisecond))),
		status: l.Status, recordID: l.RecordID, recordKey: l.RecordKey, fieldNames: l.Fields}
}

func (r timedRequest) String() string {
	return fmt.Sprintf("%s [%s .. %s, status %d]", r.what, r.arrived.Format("15:04:05.000"), r.ended.Format("15:04:05.000"), r.status)
}

// findRequest returns the first (or, last true, the last) logged request of process that
// the predicate accepts.
func findRequest(ctx context.Context, process, what string, last bool, ok func(faultproxy.TrafficLine) bool) (timedRequest, error) {
	p, err := proxy.EndedProxy(ctx, process, "its traffic log is read after it exited")
	if err != nil {
		return timedRequest{}, err
	}
	lines := p.Traffic()
	if last {
		slices.Reverse(lines)
	}
	for _, l := range lines {
		if ok(l) {
			return timed(process+": "+what, l), nil
		}
	}
	return timedRequest{}, fmt.Errorf("the fault proxy of %q logged no %s (%d requests logged)", process, what, len(lines))
}

func isRecordsCall(l faultproxy.TrafficLine, method, endpoint, app string) bool {
	return l.Method == method && strings.HasSuffix(l.Path, "/k/v1/"+endpoint+".json") && l.App == app
}

// threeWayOrder proves acceptance 8c's order from what the proxies saw. A request's effect
// on kintone lies between the moment it left its proxy and its response: a held request
// leaves at its barrier's release, any other on arrival. So each claim compares the end of
// the earlier request with the departure of the later one:
//  1. the STOP's first read of the state app (its Run read) ended before the run's last
//     PUT of its NETWORK_RUN record carrying finished_at (the terminal write; by $id or, as
//     the real FlowNet writes it, by updateKey on record_key) arrived;
//  2. that terminal write ended before the CLOSE's first request arrived (the CLOSE read a
//     terminal Run);
//  3. the CLOSE's ARCHIVED PUT arrived — so every read the CLOSE made (its hold check
//     among them) had ended — before the STOP's hold POST was released;
//  4. the hold POST ended (written, 200) before the ARCHIVED PUT was released, and the
//     ARCHIVED PUT succeeded.
func (orderDomain) threeWayOrder(ctx context.Context, stop, runner, closer, stopBarrier, closeBarrier string) error {
	sc := kit.SceneOf(ctx)
	state := sc.App(target.RoleState)
	run, err := kit.TheRun(ctx)
	if err != nil {
		return err
	}
	stopRead, err := findRequest(ctx, stop, "first GET of records in the state app", false, func(l faultproxy.TrafficLine) bool {
		return isRecordsCall(l, "GET", "records", state)
	})
	if err != nil {
		return err
	}
	terminal, err := findRequest(ctx, runner, "last PUT of the run's record carrying finished_at", true, func(l faultproxy.TrafficLine) bool {
		return isRecordsCall(l, "PUT", "record", state) && proxy.AddressesRecord(l, run.RecordID, run.RecordKey) && slices.Contains(l.Fields, "finished_at")
	})
	if err != nil {
		return err
	}
	closeFirst, err := findRequest(ctx, closer, "first request", false, func(faultproxy.TrafficLine) bool { return true })
	if err != nil {
		return err
	}
	holdWrite, err := findRequest(ctx, stop, "POST of a record in the state app", false, func(l faultproxy.TrafficLine) bool {
		return isRecordsCall(l, "POST", "record", state)
	})
	if err != nil {
		return err
	}
	archived, err := findRequest(ctx, closer, "PUT of a record in the state app carrying lifecycle_status", false, func(l faultproxy.TrafficLine) bool {
		return isRecordsCall(l, "PUT", "record", state) && slices.Contains(l.Fields, "lifecycle_status")
	})
	if err != nil {
		return err
	}
	bs := proxy.BarrierKey.Of(sc.St)
	holdLeft, err := bs.ReleasedAt(stopBarrier)
	if err != nil {
		return err
	}
	archiveLeft, err := bs.ReleasedAt(closeBarrier)
	if err != nil {
		return err
	}
	sc.St.Note("three-way order (traffic logs)", strings.Join([]string{stopRead.String(), terminal.String(), closeFirst.String(),
		archived.String() + " released " + archiveLeft.Format("15:04:05.000"), holdWrite.String() + " released " + holdLeft.Format("15:04:05.000")}, "; "))
	claims := []struct {
		subject, what  string
		earlier, later time.Time
	}{
		{"traffic.order", stopRead.what + " ended before " + terminal.what + " arrived", stopRead.ended, terminal.arrived},
		{"traffic.order", terminal.what + " ended before " + closeFirst.what + " arrived", terminal.ended, closeFirst.arrived},
		{"traffic.order", archived.what + " arrived (the CLOSE's checks done) before barrier " + stopBarrier + " let the hold write go", archived.arrived, holdLeft},
		{"traffic.order", holdWrite.what + " ended before barrier " + closeBarrier + " let the ARCHIVED write go", holdWrite.ended, archiveLeft},
	}
	for _, c := range claims {
		if err := sc.St.On(c.subject).Assert(c.what, "earlier ≤ later", c.earlier.Format(time.RFC3339Nano)+" vs "+c.later.Format(time.RFC3339Nano), !c.earlier.After(c.later)); err != nil {
			return err
		}
	}
	for _, r := range []timedRequest{terminal, holdWrite, archived} {
		if err := sc.St.On("traffic.response-status").Equal("response status of "+r.what, 200, r.status); err != nil {
			return err
		}
	}
	return nil
}

// addRequestBarrier holds the PUT of one request record (matched by its $id, the body's
// top-level "id"): the claim of exactly that request, not of another one the poller sees.
func (orderDomain) addRequestBarrier(ctx context.Context, name, process, ref, phase, field string) error {
	m, err := requestsOf(ctx).find(ref)
	if err != nil {
		return err
	}
	return proxy.InstallBarrier(ctx, name, process, "PUT", "record", "request", phase, field, m.id, nil)
}
