package ksqlflow

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// memReader serves seed rows from the emulator's schema files, counting reads per app.
type memReader struct {
	apps  map[string][]map[string]string
	reads map[string]int
}

func (m *memReader) ReadApp(_ context.Context, logical string, fields []string) ([]map[string]string, error) {
	rows, ok := m.apps[logical]
	if !ok {
		return nil, errors.New("no app " + logical)
	}
	m.reads[logical]++
	var out []map[string]string
	for _, r := range rows {
		o := map[string]string{}
		for _, f := range fields {
			if v, ok := r[f]; ok {
				o[f] = v
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// loadSeed reads the seed records of an emulator app file, giving them $id 1..n.
func loadSeed(t testing.TB, role string) []map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pkgDir, "..", "emulator", "apps", role+".json"))
	require.NoError(t, err)
	var f struct {
		Fields []struct{ Code string } `json:"fields"`
		Seed   []map[string]struct {
			Value any `json:"value"`
		} `json:"seed"`
	}
	require.NoError(t, json.Unmarshal(data, &f))
	var rows []map[string]string
	for i, s := range f.Seed {
		r := map[string]string{"$id": strconv.Itoa(i + 1)}
		for _, fd := range f.Fields {
			r[fd.Code] = ""
		}
		for k, v := range s {
			if str, ok := v.Value.(string); ok {
				r[k] = str
			}
		}
		rows = append(rows, r)
	}
	require.NotEmpty(t, rows)
	return rows
}

func seedReader(t testing.TB) *memReader {
	return &memReader{apps: map[string][]map[string]string{
		"顧客管理": loadSeed(t, "customers"),
		"案件管理": loadSeed(t, "deals"),
	}, reads: map[string]int{}}
}

var testApps = map[string]string{"顧客管理": "105", "案件管理": "106"}

// runSQL parses, checks and runs src, returning the engine (temp tables inspectable).
func runSQL(t *testing.T, r AppReader, src string) (*Engine, error) {
	t.Helper()
	sc, err := ParseScript(src)
	require.NoError(t, err)
	require.NoError(t, CheckScript(sc, testApps))
	e := &Engine{Reader: r, AsOf: time.Date(2026, 8, 15, 0, 0, 0, 0, time.UTC), Loc: time.UTC}
	return e, e.Run(context.Background(), sc)
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}

func TestSQLAggregatesEqualSeedValues(t *testing.T) {
	r := seedReader(t)
	deals := r.apps["案件管理"]
	customers := r.apps["顧客管理"]
	// Values computed directly from the seed, independent of the engine.
	augCount, augSum, bigA, total := 0, 0.0, 0, 0.0
	for _, d := range deals {
		amt := num(t, d["売上"])
		total += amt
		if d["受注予定日"] >= "2026-08-01" && d["受注予定日"] < "2026-09-01" {
			augCount++
			augSum += amt
		}
		if d["確度"] == "A" && amt >= 1000000 || d["案件ステータス"] == "受注" {
			bigA++
		}
	}
	tokyoOrOsaka := 0
	for _, c := range customers {
		if c["都道府県"] == "東京都" || c["都道府県"] == "大阪府" {
			tokyoOrOsaka++
		}
	}

	e, err := runSQL(t, r, `
CREATE TEMP TABLE #aug AS SELECT $id, 売上 FROM LAPP_案件管理 WHERE 受注予定日 >= '2026-08-01' and 受注予定日 < '2026-09-01';
CREATE TEMP TABLE #aug2 AS SELECT $id, 売上 FROM LAPP_案件管理 WHERE 受注予定日 >= @MONTH_START() and 受注予定日 < @NEXT_MONTH_START();
CREATE TEMP TABLE #agg AS SELECT COUNT(*) AS n, SUM(売上) AS s FROM #aug;
CREATE TEMP TABLE #all AS SELECT SUM(売上) AS s FROM LAPP_案件管理;
CREATE TEMP TABLE #mix AS SELECT $id FROM LAPP_案件管理 WHERE 確度 = 'A' and 売上 >= 1000000 or 案件ステータス in ('受注');
CREATE TEMP TABLE #pref AS SELECT 顧客コード AS code FROM LAPP_顧客管理 WHERE 都道府県 = '東京都' or 都道府県 = '大阪府';
CREATE TEMP TABLE #u AS SELECT 顧客コード AS code FROM LAPP_顧客管理 UNION ALL SELECT code FROM #pref UNION ALL SELECT 案件コード FROM LAPP_案件管理;
ASSERT (SELECT COUNT(*) FROM #aug) = (SELECT COUNT(*) FROM #aug2), 'month functions match the literal range';
`)
	require.NoError(t, err)
	assert.Equal(t, 20, augCount, "seed README: 20 deals in August 2026")
	assert.Equal(t, [][]string{{strconv.Itoa(augCount), strconv.FormatFloat(augSum, 'f', -1, 64)}}, e.temps["agg"].Rows)
	assert.Equal(t, []string{"n", "s"}, e.temps["agg"].Cols)
	assert.Equal(t, strconv.FormatFloat(total, 'f', -1, 64), e.temps["all"].Rows[0][0])
	assert.Len(t, e.temps["mix"].Rows, bigA)
	assert.Len(t, e.temps["pref"].Rows, tokyoOrOsaka)
	assert.Len(t, e.temps["u"].Rows, len(customers)+tokyoOrOsaka+len(deals))
	assert.Equal(t, 5*len(deals)+2*len(customers), e.ReadRows, "rows read from apps (temp reads not counted)")
}

func TestSQLAssert(t *testing.T) {
	r := seedReader(t)
	_, err := runSQL(t, r, "ASSERT (SELECT COUNT(*) FROM LAPP_顧客管理) = 40, 'forty customers';")
	require.NoError(t, err)

	r = seedReader(t)
	_, err = runSQL(t, r, "ASSERT (SELECT 1) = 0, 'never';\nSELECT COUNT(*) FROM LAPP_顧客管理;")
	var ae *AssertError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "never", ae.Message)
	assert.Equal(t, 1, ae.Pos.Line)
	assert.Zero(t, r.reads["顧客管理"], "the statement after a failed ASSERT must not run")

	// An empty scalar subquery is NULL and fails the ASSERT.
	_, err = runSQL(t, r, "ASSERT (SELECT 売上 FROM LAPP_案件管理 WHERE 売上 < 0) >= 0, 'null';")
	require.ErrorAs(t, err, &ae)

	// More than one row is an SQL error, not an assert failure.
	_, err = runSQL(t, r, "ASSERT (SELECT 売上 FROM LAPP_案件管理) >= 0, 'many';")
	var se *SQLError
	require.ErrorAs(t, err, &se)
}

func TestSQLRuntimeErrors(t *testing.T) {
	r := seedReader(t)
	_, err := runSQL(t, r, "SELECT 存在しない FROM LAPP_顧客管理;")
	var se *SQLError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Msg, "存在しない")

	_, err = runSQL(t, r, "SELECT SUM(顧客名) FROM LAPP_顧客管理;")
	require.ErrorAs(t, err, &se)
	assert.Contains(t, se.Msg, "not a number")

	sc, err := ParseScript("CREATE TEMP TABLE #a AS SELECT $id FROM LAPP_顧客管理;")
	require.NoError(t, err)
	e := &Engine{Reader: r, MaxTempRows: 10}
	require.ErrorAs(t, e.Run(context.Background(), sc), &se)
	assert.Contains(t, se.Msg, "maxTempRows")
}

func TestSQLBoundaryStopsBeforeStatement(t *testing.T) {
	r := seedReader(t)
	sc, err := ParseScript("SELECT COUNT(*) FROM LAPP_顧客管理;\nSELECT COUNT(*) FROM LAPP_案件管理;")
	require.NoError(t, err)
	e := &Engine{Reader: r, Boundary: func(i int) error {
		if i == 1 {
			return errCancelled
		}
		return nil
	}}
	require.ErrorIs(t, e.Run(context.Background(), sc), errCancelled)
	assert.Equal(t, 1, r.reads["顧客管理"])
	assert.Zero(t, r.reads["案件管理"])
}

func TestSQLRefusedConstructs(t *testing.T) {
	cases := map[string]struct {
		src       string
		code      string
		line, col int
	}{
		"insert":          {"INSERT INTO LAPP_顧客管理 SELECT 1;", diagUnsupported, 1, 1},
		"update":          {"SELECT 1;\nUPDATE LAPP_顧客管理 SET a = 1;", diagUnsupported, 2, 1},
		"import syntax":   {"IMPORT INTO LAPP_X FROM 'a.csv';", diagSyntax, 1, 25},
		"join":            {"SELECT $id FROM LAPP_顧客管理 JOIN LAPP_案件管理;", diagUnsupported, 1, 27},
		"group by":        {"SELECT COUNT(*) FROM LAPP_顧客管理 GROUP BY 業種;", diagUnsupported, 1, 32},
		"order by":        {"SELECT $id FROM LAPP_顧客管理 ORDER BY $id;", diagUnsupported, 1, 27},
		"select star":     {"SELECT * FROM LAPP_顧客管理;", diagUnsupported, 1, 8},
		"union":           {"SELECT $id FROM LAPP_顧客管理 UNION SELECT $id FROM LAPP_案件管理;", diagUnsupported, 1, 27},
		"distinct":        {"SELECT DISTINCT 業種 FROM LAPP_顧客管理;", diagUnsupported, 1, 8},
		"like":            {"SELECT $id FROM LAPP_顧客管理 WHERE 顧客名 LIKE '%a%';", diagUnsupported, 1, 37},
		"between":         {"SELECT $id FROM LAPP_案件管理 WHERE 売上 BETWEEN 1 AND 2;", diagUnsupported, 1, 36},
		"mixed aggregate": {"SELECT 業種, COUNT(*) FROM LAPP_顧客管理;", diagUnsupported, 1, 1},
		"other function":  {"SELECT MAX(売上) FROM LAPP_案件管理;", diagUnsupported, 1, 8},
		"at function":     {"SELECT $id FROM LAPP_案件管理 WHERE 受注予定日 >= @TODAY();", diagUnsupported, 1, 42},
		"block comment":   {"/* x */ SELECT 1;", diagUnsupported, 1, 1},
		"quoted ident":    {"SELECT \"a\" FROM LAPP_顧客管理;", diagUnsupported, 1, 8},
		"field vs field":  {"SELECT $id FROM LAPP_案件管理 WHERE 売上 > 確度;", diagUnsupported, 1, 38},
		"missing semi":    {"SELECT 1 SELECT 2;", diagSyntax, 1, 10},
		"bad string":      {"ASSERT (SELECT 1) = 0, 'open;", diagSyntax, 1, 24},
		"no from":         {"SELECT 顧客コード;", diagSyntax, 1, 13},
		"bad dialect":     {"-- @ksql dialect: 2\nSELECT 1;", diagHeader, 1, 1},
		"unknown header":  {"-- @ksql owner: me\nSELECT 1;", diagHeader, 1, 1},
		"empty":           {"-- @ksql name: x\n", diagSyntax, 1, 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseScript(c.src)
			var se *SyntaxError
			require.ErrorAs(t, err, &se, "must be refused: %s", c.src)
			assert.Equal(t, c.code, se.Code, se.Msg)
			assert.Equal(t, Pos{c.line, c.col}, se.Pos, se.Msg)
		})
	}
}

func TestSQLStaticChecks(t *testing.T) {
	cases := map[string]struct{ src, code string }{
		"unknown app":       {"SELECT $id FROM LAPP_売上管理;", diagUnknownApp},
		"temp before":       {"SELECT $id FROM #t;", diagUnknownTemp},
		"temp twice":        {"CREATE TEMP TABLE #t AS SELECT 1;\nCREATE TEMP TABLE #t AS SELECT 2;", diagUnknownTemp},
		"temp column":       {"CREATE TEMP TABLE #t AS SELECT $id FROM LAPP_顧客管理;\nSELECT 顧客名 FROM #t;", diagColumn},
		"temp where column": {"CREATE TEMP TABLE #t AS SELECT $id FROM LAPP_顧客管理;\nSELECT $id FROM #t WHERE x = 1;", diagColumn},
		"union arity":       {"SELECT $id, 顧客名 FROM LAPP_顧客管理 UNION ALL SELECT $id FROM LAPP_案件管理;", diagColumn},
		"assert two cols":   {"ASSERT (SELECT $id, 顧客名 FROM LAPP_顧客管理) = 1, 'x';", diagColumn},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			sc, err := ParseScript(c.src)
			require.NoError(t, err)
			err = CheckScript(sc, testApps)
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, c.code, se.Code, se.Msg)
		})
	}
}

func TestParseHeader(t *testing.T) {
	sc, err := ParseScript("-- @ksql name: job_a\n-- @ksql timeout: 600\n-- @ksql dialect: 1\n-- free comment\nSELECT 1 AS one, 'x';")
	require.NoError(t, err)
	assert.Equal(t, "job_a", sc.Header.Name)
	require.NotNil(t, sc.Header.TimeoutSec)
	assert.Equal(t, 600, *sc.Header.TimeoutSec)
	assert.Equal(t, 1, sc.Header.Dialect)
	require.Len(t, sc.Stmts, 1)
	// A BOM, CRLF line ends and loose spacing in the header are accepted.
	sc, err = ParseScript("\ufeff-- customers\r\n--   @ksql   name :  m5_shared_read\r\n\r\nSELECT 1; -- @ksql name: not_header\r\n")
	require.NoError(t, err)
	assert.Equal(t, "m5_shared_read", sc.Header.Name)
	// A header line after the first statement is an ordinary comment, not a header.
	sc, err = ParseScript("SELECT 1;\n-- @ksql name: late\n")
	require.NoError(t, err)
	assert.Empty(t, sc.Header.Name)
}

// fixtureJobs are the M-series job files with the job id each declares and the number of
// read requests each makes (the duration model of the long reads depends on it).
var fixtureJobs = map[string]struct {
	name  string
	reads int
	fails bool
}{
	"success-n1-extract.sql":   {"m5_shared_read", 1, false},
	"success-n2-aggregate.sql": {"m5_aggregate", 1, false},
	"success-n3-finalize.sql":  {"m5_finalize", 1, false},
	"assert-fail.sql":          {"m5_midfail_assert", 0, true},
	"m6-assert-fail.sql":       {"m6_midfail_assert", 0, true},
	"diamond-customers.sql":    {"m5_shared_read", 1, false},
	"diamond-deals.sql":        {"m5_diamond_deals", 1, false},
	"diamond-join.sql":         {"m5_diamond_join", 2, false},
	"job-longread.sql":         {"m5_shared_read", 12, false},
	"m6-longread.sql":          {"m6_longread", 20, false},
	"drill-independent.sql":    {"m6_drill_independent", 1, false},
	"drill-join.sql":           {"m6_drill_join", 1, false},
}

func TestFixtureJobs(t *testing.T) {
	dir := filepath.Dir(fixturePath("x"))
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for n := range fixtureJobs {
		assert.Contains(t, names, n)
	}
	for file, want := range fixtureJobs {
		t.Run(file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, file))
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(string(src), "-- @ksql name: "+want.name+"\n"))
			sc, err := ParseScript(string(src))
			require.NoError(t, err)
			assert.Equal(t, want.name, sc.Header.Name)
			require.NotNil(t, sc.Header.TimeoutSec)
			r := seedReader(t)
			_, err = runSQL(t, r, string(src))
			if want.fails {
				var ae *AssertError
				require.ErrorAs(t, err, &ae)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, want.reads, r.reads["顧客管理"]+r.reads["案件管理"], "read requests")
		})
	}
}

// TestNetworkFixturesMatchJobHeaders checks every network fixture node against the job file
// it names: the fixtures exist, every node's job file exists and parses, and its
// `-- @ksql name:` equals the node's job_id (FlowNet and kSQL-Flow both refuse a mismatch).
func TestNetworkFixturesMatchJobHeaders(t *testing.T) {
	nets, err := filepath.Glob(filepath.Join(pkgDir, "..", "..", "..", "features", "fixtures", "networks", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, nets, "no network fixtures found under features/fixtures/networks")
	checked := 0
	for _, n := range nets {
		raw, err := os.ReadFile(n)
		require.NoError(t, err)
		var doc struct {
			Nodes []struct {
				ID    string `yaml:"id"`
				JobID string `yaml:"job_id"`
				SQL   string `yaml:"sql"`
			} `yaml:"nodes"`
		}
		require.NoError(t, yaml.Unmarshal(raw, &doc), n)
		for _, node := range doc.Nodes {
			sqlPath := filepath.Join(filepath.Dir(n), filepath.FromSlash(node.SQL))
			src, err := os.ReadFile(sqlPath)
			require.NoError(t, err, "%s node %s: its job file", filepath.Base(n), node.ID)
			// CSV fixtures carry placeholder tokens the scenario replaces when it renders them.
			sc, err := ParseScript(strings.ReplaceAll(string(src), "__CSV1_ENCODING__", "UTF8"))
			require.NoError(t, err, "%s: %s", filepath.Base(n), node.SQL)
			assert.Equal(t, node.JobID, sc.Header.Name, "%s node %s: job_id vs header of %s", filepath.Base(n), node.ID, node.SQL)
			checked++
		}
	}
	assert.Positive(t, checked, "no node's job file was found")
}
