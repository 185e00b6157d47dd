package csv

import (
	"context"
	"errors"
	"fmt"

	"github.com/ksqlflow/flowtest/internal/harness/faultproxy"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
	"github.com/ksqlflow/flowtest/internal/steps/proxy"
)

// csvFaultDomain: the CSV write fault of csv1-02 (scenarios.md §2.8.3): the original hooked the
// kSQL-Flow child's HTTP client so that its 2nd POST/PUT of records to the CSV fixture app
// answered a synthetic HTTP 400 (CSV1_FAULT). Here it is a fault of the scenario's kSQL-Flow
// proxy (proxy/ksqlproxy.go), through which every kSQL-Flow child of the scenario reaches kintone
// with a config copy that changes only the base URL: it answers the n-th records write to the
// CSV fixture app, counted from the step on, with HTTP 400 CSV1_FAULT once and passes
// everything else. Each scope (the scenario's own, a sub-scope) arms a fault of its own, so
// its count starts with its own runs. FlowNet's own traffic does not pass through it.
type csvFaultDomain struct{}

func (d csvFaultDomain) register(reg stepdef.Registry) {
	reg.Step(`^the kSQL-Flow child's kintone traffic goes through a proxy that answers its (\d+)(?:st|nd|rd|th) records write to the CSV fixture app with HTTP 400 once$`, d.writeFaultProxy)
	reg.Step(`^the write-fault proxy answered (\d+) synthetic HTTP 400s?$`, d.proxyFaulted)
}

// csvFaultState is the write fault of each scope that has one.
type csvFaultState struct {
	faults map[string]string // scope id -> the id of its fault in the kSQL-Flow proxy
}

var csvFaultKey = scenario.NewKey[csvFaultState]("csv-fault")

// csvWriteFaultPath: the records writes kSQL-Flow sends to import rows, one record or a bulk
// (kintone-api.md §1.3-1.7), in a guest space too.
const csvWriteFaultPath = `^/k/v1/(guest/\d+/)?records?\.json$`

func (csvFaultDomain) writeFaultProxy(ctx context.Context, nth int) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvFaultKey.Of(sc.St)
	if s.faults == nil {
		s.faults = map[string]string{}
	}
	scopeID := fx.Scope().ID()
	if s.faults[scopeID] != "" {
		return fmt.Errorf("the scope already has a write fault")
	}
	csvApp := sc.App(target.RoleCSV)
	if csvApp == "" {
		return fmt.Errorf("the target has no CSV fixture app")
	}
	kp := proxy.KsqlProxyKey.Of(sc.St)
	if err := kp.Ensure(ctx, sc); err != nil {
		return err
	}
	f := faultproxy.Fault{
		ID:     fx.Scope().BarrierID("csv_write_fault"),
		Action: faultproxy.ActionRespond,
		// The original hook's answer (S§2.8.3); kintone's error shape with a code of our own.
		Status: 400, Code: "CSV1_FAULT", Message: "synthetic write fault",
		// POST or PUT as kintone runs it: a long query sent as POST with a method override
		// is a read, not a write.
		Match: faultproxy.FaultMatch{Path: csvWriteFaultPath, App: csvApp, Write: true, Nth: nth},
	}
	if err := kp.AddFault(f); err != nil {
		return fmt.Errorf("the CSV write fault: %w", err)
	}
	s.faults[scopeID] = f.ID
	sc.St.Note("kSQL-Flow write fault", fmt.Sprintf("the kSQL-Flow child's records write #%d to the CSV fixture app answers HTTP 400 CSV1_FAULT once (a fault of the scenario's kSQL-Flow proxy)", nth))
	return nil
}

// proxyFaulted says how many synthetic 400s the scope's write fault answered.
func (csvFaultDomain) proxyFaulted(ctx context.Context, n int) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	id := csvFaultKey.Of(sc.St).faults[fx.Scope().ID()]
	if id == "" {
		return errors.New("the scope has no write-fault proxy")
	}
	answered := 0
	for _, f := range proxy.KsqlProxyKey.Of(sc.St).FaultFirings(id) {
		if f.Status == 400 && f.Error == "" {
			answered++
		}
	}
	return sc.St.On("harness.fault.firings").Equal("synthetic HTTP 400 answers of the write-fault proxy", n, answered)
}
