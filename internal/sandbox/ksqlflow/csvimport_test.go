package ksqlflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

func TestParseImport(t *testing.T) {
	sc, err := ParseScript("-- @ksql name: j\nIMPORT INTO LAPP_CSV1 FROM CSV 'source' ENCODING SJIS BY NAME ON DUPLICATE (test_key) OVERWRITE ON ERROR SKIP INTO #err;\nASSERT (SELECT COUNT(*) FROM #err) = 0, 'no errors';")
	require.NoError(t, err)
	is := sc.Stmts[0].(*ImportStmt)
	assert.Equal(t, ImportStmt{Pos: is.Pos, App: "CSV1", AppPos: is.AppPos, Input: "source", Encoding: "sjis", Key: "test_key", ErrTable: "err"}, *is)
	require.NoError(t, CheckScript(sc, map[string]string{"CSV1": "1"}))
	assert.Error(t, CheckScript(sc, map[string]string{"other": "1"}))
}

type memWriter struct {
	keys    map[string]bool
	added   []kintoneapi.Record
	updated []string
	failAdd bool
}

func (m *memWriter) keysOf(context.Context, string, string) (map[string]bool, error) {
	return m.keys, nil
}
func (m *memWriter) add(_ context.Context, _ string, recs []kintoneapi.Record) error {
	if m.failAdd {
		return &kintoneapi.APIError{Status: 400, Code: "CB_VA01"}
	}
	m.added = append(m.added, recs...)
	return nil
}
func (m *memWriter) updateByKey(_ context.Context, _, _, v string, _ kintoneapi.Record) error {
	m.updated = append(m.updated, v)
	return nil
}

func TestImportCSV(t *testing.T) {
	data := []byte("test_key,test_value\r\nk1,v1\r\nk2,v2\r\n")
	sum := sha256.Sum256(data)
	p := filepath.Join(t.TempDir(), "in.csv")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	ins, err := readImports([]string{"source=" + p}, []string{"source=" + hex.EncodeToString(sum[:])})
	require.NoError(t, err)
	_, err = readImports([]string{"source=" + p}, []string{"source=" + hex.EncodeToString(make([]byte, 32))})
	assert.ErrorContains(t, err, "differs")

	w := &memWriter{keys: map[string]bool{"k2": true}}
	s := &ImportStmt{App: "A", Input: "source", Encoding: "utf8", Key: "test_key", ErrTable: "err"}
	errs, rc, n, err := importCSV(context.Background(), w, s, ins["source"])
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Empty(t, errs.Rows)
	assert.Equal(t, InputFile{Name: "source", SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(data)), Rows: 2, Encoding: "utf8"}, rc)
	assert.Len(t, w.added, 1)
	assert.Equal(t, []string{"k2"}, w.updated)

	w = &memWriter{keys: map[string]bool{}, failAdd: true}
	errs, _, n, err = importCSV(context.Background(), w, s, ins["source"])
	require.NoError(t, err)
	assert.Equal(t, 0, n)
	assert.Len(t, errs.Rows, 2, "ON ERROR SKIP: the rows of the failed write go to #err")
	assert.NotContains(t, errs.Rows[0], "v1", "no cell value in #err")
}

// BenchmarkImportCSV10k imports 10,000 rows (the csv1-04 size) into an in-memory writer: the
// parse and batching cost of the import without kintone (csv1-04 records the child's wall
// time and peak RSS against the emulator).
func BenchmarkImportCSV10k(b *testing.B) {
	var buf strings.Builder
	buf.WriteString("test_key,test_value\r\n")
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&buf, "KSQL_FLOW_TEST_0123456789ab_%05d,CSV1_PRIVATE_CELL_DO_NOT_AUDIT_%d\r\n", i, i)
	}
	data := []byte(buf.String())
	sum := sha256.Sum256(data)
	in := &importInput{Name: "source", SHA256: hex.EncodeToString(sum[:]), Data: data}
	s := &ImportStmt{App: "A", Input: "source", Encoding: "utf8", Key: "test_key", ErrTable: "err"}
	b.ReportAllocs()
	for b.Loop() {
		w := &memWriter{keys: map[string]bool{}}
		if _, rc, _, err := importCSV(context.Background(), w, s, in); err != nil || rc.Rows != 10000 {
			b.Fatal(err, rc.Rows)
		}
	}
}
