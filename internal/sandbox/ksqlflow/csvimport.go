package ksqlflow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/transform"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// CSV import (IMPORT INTO, capability importCsv). Decisions where the contract is silent
// (product-contract.md §7 confirms only --import-csv name=<abs path> and
// --expected-import-sha256 name=<64 hex>, and the input_files receipt):
//   - The statement is
//       IMPORT INTO LAPP_<app> FROM CSV '<name>' ENCODING <UTF8|SJIS> BY NAME
//         ON DUPLICATE (<key field>) OVERWRITE ON ERROR SKIP INTO #<err>;
//     '<name>' is the --import-csv name. BY NAME maps header columns to field codes (a
//     header column that is no field of the app is a SQL_ERROR before any write).
//   - Every --import-csv needs its --expected-import-sha256; the file is read once, its
//     sha256 compared before the job lock (mismatch: VALIDATION_ERROR, nothing started), and
//     the same bytes are imported (a later change of the file cannot slip in).
//   - Rows whose key already exists are updated by key; new rows are added in batches of
//     100. A kintone error on a write puts the rows of that write into #<err> (columns
//     row_no, error_code: never a cell value) and the import goes on (ON ERROR SKIP); the
//     job decides with an ASSERT on #<err>.
//   - The receipt (input_files) carries name, sha256, bytes, rows, encoding; no path.

// importInput is one --import-csv input, read and checked.
type importInput struct {
	Name, Path, SHA256 string
	Data               []byte
}

// InputFile is one input_files / output_files receipt of the Execution Result.
type InputFile struct {
	Name     string `json:"name"`
	SHA256   string `json:"sha256"`
	Bytes    int64  `json:"bytes"`
	Rows     int    `json:"rows"`
	Encoding string `json:"encoding"`
}

// readImports pairs --import-csv with --expected-import-sha256 and reads each file.
func readImports(paths, shas []string) (map[string]*importInput, error) {
	out := map[string]*importInput{}
	for _, kv := range paths {
		name, p, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !filepath.IsAbs(p) {
			return nil, fmt.Errorf("--import-csv %q: expected name=<absolute path>", kv)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--import-csv %s given twice", name)
		}
		out[name] = &importInput{Name: name, Path: p}
	}
	for _, kv := range shas {
		name, h, ok := strings.Cut(kv, "=")
		in, known := out[name]
		if !ok || !known || len(h) != 64 {
			return nil, fmt.Errorf("--expected-import-sha256 %q: expected name=<64 hex> of an --import-csv name", kv)
		}
		in.SHA256 = strings.ToLower(h)
	}
	for name, in := range out {
		if in.SHA256 == "" {
			return nil, fmt.Errorf("--import-csv %s has no --expected-import-sha256", name)
		}
		data, err := os.ReadFile(in.Path)
		if err != nil {
			return nil, fmt.Errorf("input %s: %v", name, errors.Unwrap(err))
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != in.SHA256 {
			return nil, fmt.Errorf("input %s: sha256 %s differs from the expected %s", name, got, in.SHA256)
		}
		in.Data = data
	}
	return out, nil
}

// decodeCSV decodes the input's bytes strictly and splits header and rows.
func decodeCSV(data []byte, enc string) (header []string, rows [][]string, err error) {
	var text []byte
	switch enc {
	case "utf8":
		text = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		if !utf8.Valid(text) {
			return nil, nil, fmt.Errorf("the input is not valid UTF-8")
		}
	case "sjis":
		text, _, err = transform.Bytes(japanese.ShiftJIS.NewDecoder(), data)
		if err != nil {
			return nil, nil, fmt.Errorf("the input is not valid Shift_JIS: %v", err)
		}
		if bytes.ContainsRune(text, utf8.RuneError) {
			return nil, nil, fmt.Errorf("the input is not valid Shift_JIS")
		}
	default:
		return nil, nil, fmt.Errorf("unknown encoding %q", enc)
	}
	r := csv.NewReader(bytes.NewReader(text))
	r.FieldsPerRecord = 0
	header, err = r.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("CSV header: %v", err)
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, nil, fmt.Errorf("CSV line %d: %v", pe.Line, pe.Err)
			}
			return nil, nil, fmt.Errorf("CSV: %v", err)
		}
		rows = append(rows, rec)
	}
	return header, rows, nil
}

// recordWriter is what an import needs from kintone (the conn in production).
type recordWriter interface {
	keysOf(ctx context.Context, logical, key string) (map[string]bool, error)
	add(ctx context.Context, logical string, recs []kintoneapi.Record) error
	updateByKey(ctx context.Context, logical, key, value string, rec kintoneapi.Record) error
}

// importCSV runs one IMPORT statement and returns its error rows table and receipt.
func importCSV(ctx context.Context, w recordWriter, s *ImportStmt, in *importInput) (*Table, InputFile, int, error) {
	rc := InputFile{Name: in.Name, SHA256: in.SHA256, Bytes: int64(len(in.Data)), Encoding: s.Encoding}
	data := in.Data
	if defect.ImportReadsFirstChunk && len(data) > 512<<10 {
		// planted defect: the reader keeps only the first 512 KiB chunk (cut at a line end)
		data = data[:bytes.LastIndexByte(data[:512<<10], '\n')+1]
	}
	header, rows, err := decodeCSV(data, s.Encoding)
	if err != nil {
		return nil, rc, 0, &SQLError{s.Pos, fmt.Sprintf("IMPORT %s: %v", in.Name, err)}
	}
	rc.Rows = len(rows)
	keyCol := -1
	for i, h := range header {
		if h == s.Key {
			keyCol = i
		}
	}
	if keyCol < 0 {
		return nil, rc, 0, &SQLError{s.Pos, fmt.Sprintf("IMPORT %s: BY NAME: the header has no column %q", in.Name, s.Key)}
	}
	existing, err := w.keysOf(ctx, s.App, s.Key)
	if err != nil {
		return nil, rc, 0, err
	}
	im := &importer{w: w, s: s, header: header, keyCol: keyCol, existing: existing,
		errs: &Table{Cols: []string{"row_no", "error_code"}}}
	for i, row := range rows {
		if err := im.row(ctx, i+1, row); err != nil {
			return nil, rc, im.written, err
		}
	}
	if err := im.flush(ctx); err != nil {
		return nil, rc, im.written, err
	}
	return im.errs, rc, im.written, nil
}

// importer writes an IMPORT's rows: a row whose key exists updates that record, new ones
// are added in batches of 100. A refused write is an error row; only a cancelled context
// stops the import.
type importer struct {
	w        recordWriter
	s        *ImportStmt
	header   []string
	keyCol   int
	existing map[string]bool // keys in the app, and those already batched

	errs     *Table
	written  int
	batch    []kintoneapi.Record
	batchNos []int
}

// skip records the rows of a refused write as error rows with the API error's code.
func (im *importer) skip(rowNos []int, err error) {
	code, _ := classifyAPIError(err)
	for _, n := range rowNos {
		im.errs.Rows = append(im.errs.Rows, []string{fmt.Sprint(n), code})
	}
}

// flush adds the batch of new records.
func (im *importer) flush(ctx context.Context) error {
	if len(im.batch) == 0 {
		return nil
	}
	if err := im.w.add(ctx, im.s.App, im.batch); err != nil {
		if ctx.Err() != nil {
			return err
		}
		im.skip(im.batchNos, err)
	} else {
		im.written += len(im.batch)
	}
	im.batch, im.batchNos = nil, nil
	return nil
}

// row imports the CSV row numbered rowNo (from 1).
func (im *importer) row(ctx context.Context, rowNo int, row []string) error {
	if len(row) != len(im.header) {
		im.errs.Rows = append(im.errs.Rows, []string{fmt.Sprint(rowNo), "COLUMN_COUNT"})
		return nil
	}
	rec := kintoneapi.Record{}
	for c, h := range im.header {
		rec[h] = kintoneapi.Field{Value: row[c]}
	}
	key := row[im.keyCol]
	if im.existing[key] {
		delete(rec, im.s.Key)
		if err := im.w.updateByKey(ctx, im.s.App, im.s.Key, key, rec); err != nil {
			if ctx.Err() != nil {
				return err
			}
			im.skip([]int{rowNo}, err)
			return nil
		}
		im.written++
		return nil
	}
	im.existing[key] = true
	im.batch, im.batchNos = append(im.batch, rec), append(im.batchNos, rowNo)
	if len(im.batch) == 100 {
		return im.flush(ctx)
	}
	return nil
}

// keysOf reads the key field of every record of the app.
func (r *appReader) keysOf(ctx context.Context, logical, key string) (map[string]bool, error) {
	rows, err := r.ReadApp(ctx, logical, []string{"$id", key})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(rows))
	for _, row := range rows {
		out[row[key]] = true
	}
	return out, nil
}

func (r *appReader) add(ctx context.Context, logical string, recs []kintoneapi.Record) error {
	a, ok := r.c.prof.Apps[logical]
	if !ok {
		return fmt.Errorf("LAPP_%s is not a logical app of the profile", logical)
	}
	_, _, err := r.c.kc.AddRecords(ctx, a.AppID, recs)
	return err
}

func (r *appReader) updateByKey(ctx context.Context, logical, key, value string, rec kintoneapi.Record) error {
	a, ok := r.c.prof.Apps[logical]
	if !ok {
		return fmt.Errorf("LAPP_%s is not a logical app of the profile", logical)
	}
	_, err := r.c.kc.UpdateByKey(ctx, a.AppID, key, value, rec, "")
	return err
}
