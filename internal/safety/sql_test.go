package safety

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassifySQL(t *testing.T) {
	const csv = DefaultCSVLogicalApp
	cases := []struct {
		name string
		src  string
		// refused: substring of the first refusal reason, or of the lexer
		// error; "" means every statement is allowed.
		refused string
	}{
		{"select", "SELECT COUNT(*) FROM LAPP_顧客管理;", ""},
		{"header and select", "-- @ksql name: m5_shared_read\n-- @ksql timeout: 60\nSELECT 1", ""},
		{"assert", "ASSERT (SELECT 1) = 0, 'deterministic failure';\nSELECT COUNT(*) FROM LAPP_顧客管理;", ""},
		{"create temp as select", "CREATE TEMP TABLE #t1 AS SELECT $id FROM LAPP_案件管理;", ""},
		{"create temporary as (select)", "create temporary table #t AS (select 1)", ""},
		{"mixed case", "sElEcT 1; AsSeRt (select 1) >= 0, 'ok'; Create Temp Table #x As Select 1", ""},
		{"import into csv app", "IMPORT INTO LAPP_KSQL_FLOW_TEST_CSV1 FROM source ON DUPLICATE (test_key) ON ERROR SKIP INTO #err;\nASSERT (SELECT COUNT(*) FROM #err) = 0, 'no errors'", ""},
		{"leading BOM", "\uFEFFSELECT 1;", ""},
		{"leading whitespace and blank statements", "  \n\t ;; SELECT 1 ;  ; ", ""},
		{"keyword inside string", "SELECT 'DELETE FROM x; DROP TABLE y' AS s", ""},
		{"escaped quote in string", "SELECT 'it''s; DELETE FROM x' AS s", ""},
		{"keyword in line comment", "SELECT 1 -- then DELETE FROM x;\n", ""},
		{"keyword in block comment", "SELECT /* DROP TABLE x; */ 1", ""},
		{"keyword in quoted identifier", `SELECT "delete" FROM LAPP_X`, ""},
		{"identifier containing keyword", "SELECT updated_at, deleted_count FROM LAPP_X", ""},
		{"placeholder tokens", "SELECT * FROM LAPP_X WHERE d >= @MONTH_START() AND e = '__CSV1_ENCODING__'", ""},
		{"replace function", "SELECT REPLACE(name, 'a', 'b') FROM LAPP_X", ""},
		{"select into temp", "SELECT 1 INTO #tmp", ""},

		{"insert", "INSERT INTO LAPP_X VALUES (1)", "INSERT writes data"},
		{"upsert", "upsert into LAPP_X values (1)", "UPSERT writes data"},
		{"update", "Update LAPP_X SET a = 1", "UPDATE writes data"},
		{"delete", "delete from LAPP_X", "DELETE writes data"},
		{"drop", "DROP TABLE #t", "DROP writes data"},
		{"truncate", "TRUNCATE TABLE LAPP_X", "TRUNCATE writes data"},
		{"merge", "MERGE INTO LAPP_X USING s ON 1=1", "MERGE writes data"},
		{"create table not temp", "CREATE TABLE t AS SELECT 1", "CREATE TABLE (not TEMP)"},
		{"create view", "CREATE VIEW v AS SELECT 1", "CREATE VIEW"},
		{"create temp table without select", "CREATE TEMP TABLE #t (a int)", "AS SELECT"},
		{"create temp table as insert", "CREATE TEMP TABLE #t AS INSERT INTO x VALUES (1)", "AS SELECT"},
		{"import into other app", "IMPORT INTO LAPP_顧客管理 FROM source", "only the CSV fixture app"},
		{"import into lower-case csv app", "IMPORT INTO lapp_ksql_flow_test_csv1 FROM source", "only the CSV fixture app"},
		{"import bare logical name", "IMPORT INTO KSQL_FLOW_TEST_CSV1 FROM source", "only the CSV fixture app"},
		{"unknown statement", "SET x = 1", "unrecognised statement"},
		{"with clause", "WITH a AS (SELECT 1) SELECT * FROM a", "unrecognised"},
		{"punctuation first", "= 1", "unrecognised"},
		{"two statements on one line", "SELECT 1; DELETE FROM LAPP_X", "DELETE writes data"},
		{"write after comment on same line", "SELECT 1 /* c */; /* c */ DROP TABLE x", "DROP"},
		{"write after string with semicolon", "SELECT ';'; UPDATE LAPP_X SET a=1", "UPDATE"},
		{"write hidden without semicolon", "SELECT 1 DELETE FROM LAPP_X", "contains DELETE"},
		{"assert with subquery delete", "ASSERT (SELECT 1 FROM (DELETE FROM x)) = 0, 'm'", "contains DELETE"},
		{"CTAS with embedded insert", "CREATE TEMP TABLE #t AS SELECT 1; CREATE TEMP TABLE #u AS SELECT 1 UNION ALL INSERT", "contains INSERT"},
		{"select into real table", "SELECT * INTO LAPP_X FROM #t", "non-temporary"},
		{"select into quoted table", `SELECT * INTO "x" FROM #t`, "non-temporary"},
		{"import then select into real", "IMPORT INTO LAPP_KSQL_FLOW_TEST_CSV1 FROM s ON ERROR SKIP INTO LAPP_Y", "non-temporary"},
		{"BOM between keyword letters is whitespace", "SEL\uFEFFECT 1", "unrecognised"},
		{"unicode case variant of insert", "ınsert into x values (1)", "INSERT writes data"},
		{"comment then write on next line", "-- SELECT only\nDELETE FROM LAPP_X", "DELETE"},
		{"line comment ending in CR", "SELECT 1 -- x\rDELETE FROM LAPP_X", "contains DELETE"},
		{"parenthesised select then write", "(SELECT 1); DROP TABLE x", "DROP"},

		{"unterminated string", "SELECT 'abc; DELETE FROM x", "unterminated"},
		{"unterminated block comment", "SELECT 1 /* DELETE", "unterminated"},
		{"nested block comment", "/* outer /* inner */ DELETE FROM x */ SELECT 1", "nested"},
		{"backslash escape ambiguity", `SELECT 'a\'; DELETE FROM x; --'`, "backslash"},
		{"empty file", "  -- only a header\n", "no SQL statement"},
		{"bom only", "\uFEFF", "no SQL statement"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stmts, err := ClassifySQL(tc.src, csv)
			if err != nil {
				require.NotEmpty(t, tc.refused, "unexpected lexer error: %v", err)
				require.Contains(t, err.Error(), tc.refused)
				return
			}
			var refusals []string
			for _, s := range stmts {
				if s.Refused != "" {
					refusals = append(refusals, s.Refused)
				} else {
					require.NotEmpty(t, s.Kind)
				}
			}
			if tc.refused == "" {
				require.Empty(t, refusals)
				return
			}
			require.NotEmpty(t, refusals, "expected refusal %q, kinds %+v", tc.refused, stmts)
			require.Contains(t, refusals[0], tc.refused)
		})
	}
}

func TestClassifySQLPositions(t *testing.T) {
	stmts, err := ClassifySQL("SELECT 1;\n\nASSERT (SELECT 1) = 1, 'x';\nCREATE TEMP TABLE #a AS SELECT 1; IMPORT INTO LAPP_C FROM s", "C")
	require.NoError(t, err)
	require.Len(t, stmts, 4)
	require.Equal(t, []string{StmtSelect, StmtAssert, StmtCreateTemp, StmtImport}, []string{stmts[0].Kind, stmts[1].Kind, stmts[2].Kind, stmts[3].Kind})
	require.Equal(t, []int{1, 3, 4, 4}, []int{stmts[0].Line, stmts[1].Line, stmts[2].Line, stmts[3].Line})
	require.Equal(t, 4, stmts[3].Index)
}

func TestImportRefusedWithoutCSVApp(t *testing.T) {
	stmts, err := ClassifySQL("IMPORT INTO LAPP_ FROM s", "")
	require.NoError(t, err)
	require.NotEmpty(t, stmts[0].Refused)
}

func TestSQLJobName(t *testing.T) {
	require.Equal(t, "m5_shared_read", SQLJobName("\uFEFF-- @ksql name: m5_shared_read\nSELECT 1"))
	require.Equal(t, "KSQL_FLOW_TEST_0123abcd_x", SQLJobName("-- note\n  --@ksql name:KSQL_FLOW_TEST_0123abcd_x\n"))
	require.Equal(t, "", SQLJobName("SELECT 1 -- @ksql name: x"))
}

func BenchmarkClassifySQL(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 16; i++ {
		sb.WriteString("CREATE TEMP TABLE #t AS SELECT $id FROM LAPP_顧客管理 UNION ALL SELECT $id FROM LAPP_案件管理; -- c\n")
	}
	src := sb.String()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := ClassifySQL(src, DefaultCSVLogicalApp); err != nil {
			b.Fatal(err)
		}
	}
}
