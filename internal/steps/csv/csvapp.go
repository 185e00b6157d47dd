package csv

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// csvAppDomain: the CSV fixture app (scenarios.md §2.8): the scope's rows read exactly
// (kintone's like is a partial match, so the prefix is checked in Go) with its view-only
// token — a live tenant must give KSQL_CSV1_TARGET a read token too, else the read step says
// so — compared with the CSV input, the finalize marker row, and the scope's rows deleted
// through the write guard after the scenario.
type csvAppDomain struct{}

func (d csvAppDomain) register(reg stepdef.Registry) {
	reg.Step(`^the scope's finalize marker row is in the CSV fixture app$`, d.markerRow)
	reg.Step(`^the CSV fixture app holds every row of the CSV input exactly once with its value$`, d.appHoldsEveryRow)
	reg.Step(`^the CSV fixture app holds no row of the scope$`, d.appHoldsNoRow)
	reg.Step(`^the scope's rows are deleted from the CSV fixture app$`, d.rowsDeleted)
	reg.Step(`^the CSV fixture app holds some but not all rows of the CSV input, and their count is noted$`, d.someRows)
	reg.Step(`^the CSV fixture app still holds the noted count of rows of the scope$`, d.sameCount)
}

// csvAppState is the CSV fixture app's reader and a row count noted by a step.
type csvAppState struct {
	reader *kintoneapi.Client
	noted  int
}

var csvAppKey = scenario.NewKey[csvAppState]("csv-app")

// csvReader reads the CSV fixture app with its view-only token.
func (s *csvAppState) csvReader(sc *kit.Scene) (*kintoneapi.Client, error) {
	if s.reader == nil {
		r, err := sc.Suite.Target.ReadClient(target.RoleCSV)
		if err != nil {
			return nil, fmt.Errorf("CSV fixture app reader: %w", err)
		}
		s.reader = kintoneguard.Counted(r, sc.St.API)
	}
	return s.reader, nil
}

// scopeRows reads the CSV fixture app's rows of a scope: kintone's like is a partial match,
// so the prefix is checked exactly here.
func scopeRows(ctx context.Context, sc *kit.Scene, scopeID string) ([]kit.CSVRow, error) {
	r, err := csvAppKey.Of(sc.St).csvReader(sc)
	if err != nil {
		return nil, err
	}
	prefix := kintoneguard.CSVRowPrefix(scopeID)
	recs, err := r.GetAll(ctx, sc.App(target.RoleCSV), fmt.Sprintf("test_key like %s", kit.Quote(prefix)), nil)
	if err != nil {
		return nil, fmt.Errorf("read the CSV fixture app: %w", err)
	}
	var out []kit.CSVRow
	for _, rec := range recs {
		if row := kit.DecodeCSVRow(rec); strings.HasPrefix(row.Key, prefix) {
			out = append(out, row)
		}
	}
	return out, nil
}

func (csvAppDomain) appHoldsEveryRow(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	input := csvIOKey.Of(sc.St).written()
	rows, err := scopeRows(ctx, sc, kit.FixturesOf(ctx).Scope().ID())
	if err != nil {
		return err
	}
	count := map[string]int{}
	value := map[string]string{}
	for _, r := range rows {
		count[r.Key]++
		value[r.Key] = r.Value
	}
	var missing, dup, wrong []string
	for _, want := range input {
		switch {
		case count[want[0]] == 0:
			missing = append(missing, want[0])
		case count[want[0]] > 1:
			dup = append(dup, want[0])
		case value[want[0]] != want[1]:
			wrong = append(wrong, want[0])
		}
	}
	if err := sc.St.On("harness.csv-app.rows").Equal("rows of the scope in the CSV fixture app", len(input), len(rows)); err != nil {
		return err
	}
	return sc.St.On("harness.csv-app.rows").Equal("CSV input rows missing, duplicated or with another value in the CSV fixture app", "(none)",
		kit.OrNone(strings.Join(append(append(missing, dup...), wrong...), ",")))
}

func (csvAppDomain) appHoldsNoRow(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	rows, err := scopeRows(ctx, sc, kit.FixturesOf(ctx).Scope().ID())
	if err != nil {
		return err
	}
	return sc.St.On("harness.csv-app.rows").Equal("rows of the scope in the CSV fixture app", 0, len(rows))
}

// deleteCSVRows deletes the scope's rows and finalize marker of the CSV fixture app
// through the write guard.
func deleteCSVRows(ctx context.Context, sc *kit.Scene, scopeID string) error {
	rows, err := scopeRows(ctx, sc, scopeID)
	if err != nil {
		return err
	}
	r, err := csvAppKey.Of(sc.St).csvReader(sc)
	if err != nil {
		return err
	}
	marker := kintoneguard.CSVMarkerKey(scopeID)
	recs, err := r.GetAll(ctx, sc.App(target.RoleCSV), "test_key in ("+kit.Quote(marker)+")", nil)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if row := kit.DecodeCSVRow(rec); row.Key == marker {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	g, app, err := guardedCSV(sc, scopeID)
	if err != nil {
		return err
	}
	for len(rows) > 0 {
		n := min(len(rows), 100)
		ids := make([]string, n)
		for i := range n {
			ids[i] = rows[i].RecordID
		}
		if err := g.DeleteRecords(ctx, app, ids, nil); err != nil {
			return errors.Join(fmt.Errorf("delete CSV fixture rows of %s", scopeID), err)
		}
		rows = rows[n:]
	}
	return nil
}

// guardedCSV is a write-guarded client of the CSV fixture app for the scope.
func guardedCSV(sc *kit.Scene, scopeID string) (*kintoneguard.Client, string, error) {
	t := sc.Suite.Target
	a, err := t.App(target.RoleCSV)
	if err != nil {
		return nil, "", err
	}
	hc, err := kintoneapi.HTTPClientWithCA(t.CAFile)
	if err != nil {
		return nil, "", err
	}
	api := kintoneapi.New(t.BaseURL, hc, map[string]string{a.ID: a.Token("full")})
	g, err := kintoneguard.New(api, kintoneguard.Apps{State: t.Apps[target.RoleState].ID, Audit: t.Apps[target.RoleAudit].ID,
		Request: t.Apps[target.RoleRequest].ID, Log: t.Apps[target.RoleLog].ID, CSV: a.ID}, scopeID, kintoneguard.Options{Profile: t.Profile, Counter: sc.St.API})
	return g, a.ID, err
}

// markerRow adds the scope's finalize marker row through the write guard (deleted with the
// scope's rows after the scenario).
func (csvAppDomain) markerRow(ctx context.Context) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	if _, err := csvIOKey.Of(sc.St).ioRoot(sc, fx); err != nil { // registers the cleanup
		return err
	}
	g, app, err := guardedCSV(sc, fx.Scope().ID())
	if err != nil {
		return err
	}
	_, _, err = g.AddRecord(ctx, app, kintoneapi.Values(map[string]any{"test_key": kintoneguard.CSVMarkerKey(fx.Scope().ID()), "test_value": "FMK"}))
	return err
}

func (csvAppDomain) rowsDeleted(ctx context.Context) error {
	return deleteCSVRows(ctx, kit.SceneOf(ctx), kit.FixturesOf(ctx).Scope().ID())
}

func (csvAppDomain) someRows(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	s := csvAppKey.Of(sc.St)
	rows, err := scopeRows(ctx, sc, kit.FixturesOf(ctx).Scope().ID())
	if err != nil {
		return err
	}
	s.noted = len(rows)
	sc.St.Note("rows of the scope in the CSV fixture app", fmt.Sprint(len(rows)))
	all := len(csvIOKey.Of(sc.St).written())
	return sc.St.On("harness.csv-app.rows").Assert("rows of the scope in the CSV fixture app after the partial import", fmt.Sprintf("1..%d", all-1), len(rows), len(rows) >= 1 && len(rows) < all)
}

func (csvAppDomain) sameCount(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	rows, err := scopeRows(ctx, sc, kit.FixturesOf(ctx).Scope().ID())
	if err != nil {
		return err
	}
	return sc.St.On("harness.csv-app.rows").Equal("rows of the scope in the CSV fixture app (as noted)", csvAppKey.Of(sc.St).noted, len(rows))
}
