package emulator

import (
	"strconv"
	"testing"
	"time"
)

// FuzzParseQuery: no query text panics the emulator's query compiler or the run of what it
// compiled; a refusal is a 400 with kintone's code; an accepted query selects exactly the
// records its condition holds for, pages them within limit and offset, and parses the same
// with spaces around it (kintone ignores them).
//
//	go test -run '^$' -fuzz '^FuzzParseQuery$' -fuzztime 2m ./sandbox/kintone
func FuzzParseQuery(f *testing.F) {
	for _, q := range []string{
		``, `record_key in ("K1", "K3")`, `record_key = "K2"`, `record_key != "K2" order by $id asc`,
		`record_key not in ("K2", "K3") order by $id asc`, `status in ("RUNNING") and run_id in ("run_0")`,
		`status in ("RUNNING") or (status in ("FAILED") and max_active_runs >= 2) order by $id asc limit 2 offset 1`,
		`status_reason like "lease lost"`, `status_reason not like "x\"y"`, `run_id is empty`, `run_id is not empty`,
		`started_at > TODAY()`, `started_at < FROM_TODAY(-3, DAYS)`, `started_at >= THIS_MONTH()`, `$id > 2 order by started_at, $id desc`,
		`record_type in ("NETWORK_RUN")`, `limit 501`, `offset 10001`, `((`, `record_key = `, `"`, `record_key　=　"全角"`,
	} {
		f.Add(q)
	}
	schemas, err := LoadSchemas()
	if err != nil {
		f.Fatal(err)
	}
	var state *AppSchema
	for _, s := range schemas {
		if s.Role == "state" {
			state = s
		}
	}
	if state == nil {
		f.Fatal("no state app schema")
	}
	a := newApp(state)
	values := []string{"", "RUNNING", "FAILED", "NETWORK_RUN", "K1", "run_0", "2026-08-01T10:00:00Z", "3", "owner_instance_id=host1 lease lost"}
	for i := 1; i <= 6; i++ {
		rec := map[string]fieldOut{codeID: {Value: strconv.Itoa(i)}, codeRevision: {Value: "1"},
			codeCreatedAt: {Value: "2026-08-01T10:00:00Z"}, codeModifiedAt: {Value: "2026-08-01T10:00:00Z"}}
		for j, fd := range a.ordered {
			v := values[(i*7+j)%len(values)]
			if fd.Unique { // the index the query's hint uses must hold them, so one value each
				v = "K" + strconv.Itoa(i)
			}
			switch fd.Type {
			case "FILE":
				rec[fd.Code] = fieldOut{Value: []any{}}
			case "CHECK_BOX":
				rec[fd.Code] = fieldOut{Value: []any{v}}
			default:
				rec[fd.Code] = fieldOut{Value: v}
			}
		}
		r, err := a.restore(rec)
		if err != nil {
			f.Fatal(err)
		}
		a.records[r.id] = r
		a.ids = append(a.ids, r.id)
		for _, fd := range a.ordered {
			if fd.Unique {
				if a.unique[fd.Code] == nil {
					a.unique[fd.Code] = map[string]int64{}
				}
				a.unique[fd.Code][r.vals[fd.Code].(string)] = r.id
			}
		}
	}
	now := time.Date(2026, 8, 3, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, q string) {
		c, aerr := parseQuery(a, q, now)
		_, aerr2 := parseQuery(a, " \t"+q+"\n ", now)
		if (aerr == nil) != (aerr2 == nil) {
			t.Fatalf("%q: surrounding spaces change the outcome: %v / %v", q, aerr, aerr2)
		}
		if aerr != nil {
			if aerr.status != 400 || aerr.code == "" || aerr.message == "" {
				t.Fatalf("%q: refusal without status 400 and a code: %+v", q, aerr)
			}
			return
		}
		page, total := c.run(a)
		want := 0
		for _, r := range a.records {
			if c.where == nil || c.where(r) {
				want++
			}
		}
		if total != want {
			t.Fatalf("%q: total %d, but the condition holds for %d records", q, total, want)
		}
		rest := total - c.offset
		if rest < 0 {
			rest = 0
		}
		if len(page) != min(rest, c.limit) {
			t.Fatalf("%q: page of %d records, total %d, offset %d, limit %d", q, len(page), total, c.offset, c.limit)
		}
	})
}
