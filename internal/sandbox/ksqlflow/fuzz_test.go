package ksqlflow

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseScript: no job text panics the dialect-1 parser; every refusal is a SyntaxError
// with a diagnostic code at a position inside the text (its line exists, its column is at most
// one past the line's end); an accepted script keeps its statements, at the same positions,
// with an empty statement appended.
//
//	go test -run '^$' -fuzz '^FuzzParseScript$' -fuzztime 2m ./sandbox/ksqlflow
func FuzzParseScript(f *testing.F) {
	jobs, _ := filepath.Glob(filepath.Join("..", "..", "..", "features", "fixtures", "jobs", "*.sql"))
	for _, j := range jobs {
		if b, err := os.ReadFile(j); err == nil {
			f.Add(string(b))
		}
	}
	for _, s := range []string{
		"-- @ksql name: j\nIMPORT INTO LAPP_CSV1 FROM CSV 'source' ENCODING SJIS BY NAME ON DUPLICATE (test_key) OVERWRITE ON ERROR SKIP INTO #err;\nASSERT (SELECT COUNT(*) FROM #err) = 0, 'no errors';",
		"CREATE TEMP TABLE #a AS SELECT $id FROM LAPP_顧客管理;",
		"\ufeff-- @ksql name: x\r\n-- @ksql timeout: 30s\r\nSELECT a, SUM(b) AS s FROM LAPP_deals WHERE c IN ('x', 'y') AND d >= MONTH_START() OR NOT e = 1\r\nUNION ALL SELECT 1;",
		"-- @ksql dialect: 2\nSELECT 1;", "-- @ksql bogus\nSELECT 1;", "/* x */ SELECT 1;", "SELECT 'unterminated", "SELECT 1 SELECT 2", ";;;", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sc, err := ParseScript(src)
		text := strings.TrimPrefix(src, "\ufeff")
		lines := strings.Split(text, "\n")
		inside := func(p Pos) bool {
			return p.Line >= 1 && p.Line <= len(lines) && p.Col >= 1 && p.Col <= utf8.RuneCountInString(lines[p.Line-1])+1
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %T is not a SyntaxError: %v", src, err, err)
			}
			if se.Code == "" || !inside(se.Pos) {
				t.Fatalf("%q: refusal without a code or outside the text (%d lines): %+v", src, len(lines), se)
			}
			return
		}
		for _, st := range sc.Stmts {
			if !inside(st.StmtPos()) {
				t.Fatalf("%q: statement at %v, outside the text", src, st.StmtPos())
			}
		}
		again, err := ParseScript(src + "\n;\n")
		if err != nil {
			t.Fatalf("%q parses, but not with an empty statement appended: %v", src, err)
		}
		if len(again.Stmts) != len(sc.Stmts) {
			t.Fatalf("%q: %d statements, %d with an empty one appended", src, len(sc.Stmts), len(again.Stmts))
		}
		for i := range sc.Stmts {
			if sc.Stmts[i].StmtPos() != again.Stmts[i].StmtPos() {
				t.Fatalf("%q: statement %d moved from %v to %v", src, i, sc.Stmts[i].StmtPos(), again.Stmts[i].StmtPos())
			}
		}
	})
}
