package emulator

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (f *fixture) query(t *testing.T, app AppInfo, q string, extra url.Values) resp {
	t.Helper()
	p := url.Values{"app": {app.ID}, "query": {q}}
	for k, vs := range extra {
		p[k] = vs
	}
	return f.c.get("/k/v1/records.json", app.Tokens["read"], p)
}

func ids(r resp) []string {
	var out []string
	for _, x := range records(r) {
		out = append(out, fieldValue(x, "$id").(string))
	}
	return out
}

func TestQueryLanguage(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.state.Tokens["full"]
	for i, st := range []string{"RUNNING", "SUCCESS", "FAILED", "RUNNING"} {
		r := f.c.do("POST", "/k/v1/record.json", tok, map[string]any{"app": f.state.ID, "record": rec(
			"record_key", fmt.Sprintf("K%d", i+1), "record_type", "NETWORK_RUN", "status", st, "run_id", fmt.Sprintf("run_%d", i%2),
			"max_active_runs", i, "started_at", fmt.Sprintf("2026-08-0%dT10:00:00Z", i+1),
			"status_reason", fmt.Sprintf("owner_instance_id=host%d lease lost", i))})
		require.Equal(t, 200, r.status, "%s", r.body)
	}
	cases := []struct {
		q    string
		want []string
	}{
		{``, []string{"4", "3", "2", "1"}}, // default order: $id desc
		{`record_key in ("K1", "K3")`, []string{"3", "1"}},
		{`record_key = "K2"`, []string{"2"}},
		{`record_key != "K2" order by $id asc`, []string{"1", "3", "4"}},
		{`record_key not in ("K2", "K3") order by $id asc`, []string{"1", "4"}},
		{`status in ("RUNNING") and run_id in ("run_0")`, []string{"1"}},
		{`status in ("RUNNING") or status in ("FAILED") order by $id asc`, []string{"1", "3", "4"}},
		{`(status in ("SUCCESS") or run_id = "run_0") and max_active_runs >= 1 order by $id asc`, []string{"2", "3"}},
		{`status not in ("RUNNING") order by $id asc`, []string{"2", "3"}},
		{`max_active_runs > 1 order by max_active_runs desc`, []string{"4", "3"}},
		{`max_active_runs <= 1 and max_active_runs != 0`, []string{"2"}},
		{`started_at >= "2026-08-02T10:00:00Z" and started_at < "2026-08-04T00:00:00Z" order by started_at asc`, []string{"2", "3"}},
		{`started_at = "2026-08-03T10:00:30Z"`, []string{"3"}},
		{`started_at > "2026-08-02" order by $id asc`, []string{"3", "4"}},
		{`$id > 1 and $id < 4 order by $id asc`, []string{"2", "3"}},
		{`$id in ("2") limit 1`, []string{"2"}},
		{`order by run_id asc, $id desc`, []string{"3", "1", "4", "2"}},
		{`order by run_id desc, max_active_runs asc`, []string{"2", "4", "1", "3"}},
		{`status_reason like "lease"`, []string{"4", "3", "2", "1"}},
		{`status_reason like "leas"`, nil}, // word semantics: no partial words
		{`status_reason not like "host2"`, []string{"4", "2", "1"}},
		{`lock_key = "" and record_key like "K4"`, []string{"4"}},
		{`lifecycle_status in ("")`, []string{"4", "3", "2", "1"}},
		{`作成者 in (LOGINUSER()) limit 2 offset 1`, []string{"3", "2"}},
		{`作成日時 = TODAY() order by 作成日時 asc, $id asc limit 2`, []string{"1", "2"}},
		{`blocked_by is empty and status_reason is not empty limit 1`, []string{"4"}},
		{`record_key IN ("K1") ORDER BY $id ASC`, []string{"1"}},
	}
	for _, tc := range cases {
		r := f.query(t, f.state, tc.q, nil)
		if assert.Equal(t, 200, r.status, "%s: %s", tc.q, r.body) {
			assert.Equal(t, tc.want, ids(r), tc.q)
		}
	}
	errs := []struct{ q, code string }{
		{`status = "RUNNING"`, "GAIA_IQ03"},                     // = on DROP_DOWN
		{`status_reason = "x"`, "GAIA_IQ03"},                    // = on MULTI_LINE_TEXT
		{`record_key is empty`, "GAIA_IQ03"},                    // single-line text uses = ""
		{`nope = "x"`, "GAIA_IQ11"},                             // unknown field
		{`status in ("NOPE")`, "GAIA_IQ10"},                     // not an option
		{`record_key = `, "CB_VA01"},                            // syntax
		{`record_key = "x" limit 501`, "GAIA_QU01"},             // limit
		{`record_key = "x" offset 10001`, "GAIA_QU02"},          // offset
		{`limit 5 order by $id asc`, "CB_VA01"},                 // clause order
		{`record_key = "unterminated`, "CB_VA01"},               // literal
		{`started_at = FROM_TODAY(1, FORTNIGHTS)`, "GAIA_IQ25"}, // function unit
		{`started_at = NOPE()`, "GAIA_IL08"},                    // unknown function
	}
	for _, tc := range errs {
		r := f.query(t, f.state, tc.q, nil)
		assert.Equal(t, 400, r.status, "%s: %s", tc.q, r.body)
		assert.Equal(t, tc.code, r.code(), tc.q)
		if tc.code == "CB_VA01" {
			assert.Equal(t, []string{"query"}, r.errKeys(), tc.q)
		}
	}

	// totalCount only when asked, as a string; fields limits the record.
	r := f.query(t, f.state, `status in ("RUNNING") limit 1`, url.Values{"totalCount": {"true"}, "fields[0]": {"$id"}, "fields[1]": {"status"}})
	require.Equal(t, 200, r.status)
	assert.Equal(t, "2", r.json["totalCount"])
	require.Len(t, records(r), 1)
	assert.Len(t, records(r)[0], 2)
	r = f.query(t, f.state, ``, nil)
	assert.Contains(t, r.json, "totalCount")
	assert.Nil(t, r.json["totalCount"])
}

func TestQueryDefaultLimitAndBusinessSeed(t *testing.T) {
	f := newFixture(t, Options{})
	r := f.query(t, f.deals, ``, url.Values{"totalCount": {"true"}})
	require.Equal(t, 200, r.status)
	assert.Len(t, records(r), 100, "default limit 100")
	assert.Equal(t, "160", r.json["totalCount"])
	r = f.query(t, f.deals, `受注予定日 >= "2026-08-01" and 受注予定日 < "2026-09-01" limit 500`, nil)
	require.Equal(t, 200, r.status)
	sum := 0
	for _, x := range records(r) {
		var n int
		fmt.Sscan(fieldValue(x, "売上").(string), &n)
		sum += n
	}
	assert.Len(t, records(r), 20)
	assert.Equal(t, 50000000, sum, "documented in apps/README.md")
	r = f.query(t, f.deals, `確度 in ("A") and 売上 >= 1000000 order by 受注予定日 asc, 案件コード desc limit 3`, nil)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Len(t, records(r), 3)
	d0 := fieldValue(records(r)[0], "受注予定日").(string)
	d1 := fieldValue(records(r)[1], "受注予定日").(string)
	assert.LessOrEqual(t, d0, d1)
	customers := appInfo(t, f.s, "customers")
	r = f.query(t, customers, `顧客コード in ("C0001", "C0040")`, url.Values{"totalCount": {"true"}})
	assert.Equal(t, "2", r.json["totalCount"])
}

func TestDateFunctions(t *testing.T) {
	now := time.Date(2026, 8, 15, 3, 4, 5, 0, time.UTC) // 12:04 JST, a Saturday
	check := func(fn string, args []string, date bool, lo, hi string) {
		t.Helper()
		l, h, aerr := dateFunction(fn, args, now, date)
		require.Nil(t, aerr, fn)
		assert.Equal(t, lo, l, fn)
		assert.Equal(t, hi, h, fn)
	}
	check("NOW", nil, false, "2026-08-15T03:04:00Z", "2026-08-15T03:05:00Z")
	check("TODAY", nil, true, "2026-08-15", "2026-08-16")
	check("TODAY", nil, false, "2026-08-14T15:00:00Z", "2026-08-15T15:00:00Z")
	check("FROM_TODAY", []string{"-2", "DAYS"}, true, "2026-08-13", "2026-08-14")
	check("THIS_MONTH", nil, true, "2026-08-01", "2026-09-01")
	check("LAST_MONTH", []string{"LAST"}, true, "2026-07-31", "2026-08-01")
	check("NEXT_YEAR", nil, true, "2027-01-01", "2028-01-01")
	check("THIS_WEEK", []string{"MONDAY"}, true, "2026-08-10", "2026-08-11")
}
