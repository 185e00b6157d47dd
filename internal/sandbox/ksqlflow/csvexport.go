package ksqlflow

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/transform"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// CSV export (capability resultCsv). The contract leaves the export wiring open
// (product-contract.md §12 item 5); this sandbox decides, as the original harness's
// csv2-encoding-wrapper implies (scenarios.md §2.9):
//   - `run … --export-csv <sink>=<abs path>` (repeatable) exports the temp table #<sink> the
//     job created; `--export-encoding utf8|sjis` (default utf8) applies to every sink (the
//     original's encoding wrapper, flowtest's ksql-flow-wrapper, adds it to export runs).
//   - A sink is checked before the job lock: absolute path, existing parent directory, a
//     #<sink> the script creates (else VALIDATION_ERROR, nothing started).
//   - The files are written only after every statement succeeded, fail-closed: each is
//     encoded strictly (a character Shift_JIS cannot hold fails the export: SQL_ERROR, code
//     EXPORT_ENCODING_FAILED), written to a temp file beside its target, synced, and only
//     when all sinks are written are they renamed over their targets. On any failure every
//     temp file is removed and no target is touched: an old file stays byte-identical.
//   - Format: RFC 4180, header of the column names, CRLF line ends, no BOM.
//   - The receipt (output_files) is name, sha256, bytes, rows, encoding; no path.

type exportSink struct {
	Name, Path string
}

// parseExports checks --export-csv name=<abs path> against the script's temp tables.
func parseExports(specs []string, sc *Script) ([]exportSink, error) {
	temps := map[string]bool{}
	for _, st := range sc.Stmts {
		if c, ok := st.(*CreateTempStmt); ok {
			temps[c.Name] = true
		}
	}
	var out []exportSink
	seen := map[string]bool{}
	for _, kv := range specs {
		name, p, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "" || !filepath.IsAbs(p):
			return nil, fmt.Errorf("--export-csv %q: expected name=<absolute path>", kv)
		case seen[name]:
			return nil, fmt.Errorf("--export-csv %s given twice", name)
		case !temps[name]:
			return nil, fmt.Errorf("--export-csv %s: the job creates no temp table #%s", name, name)
		}
		if st, err := os.Stat(filepath.Dir(p)); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--export-csv %s: the target directory does not exist", name)
		}
		seen[name] = true
		out = append(out, exportSink{Name: name, Path: p})
	}
	return out, nil
}

// encodeTable renders a table as CSV (CRLF) in the encoding, strictly.
func encodeTable(t *Table, enc string) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.UseCRLF = true
	header := t.Cols
	if defect.ExportHeaderUppercase {
		header = make([]string, len(t.Cols)) // planted defect: column names upper-cased "like SQL"
		for i, c := range t.Cols {
			header[i] = strings.ToUpper(c)
		}
	}
	if err := w.Write(header); err != nil {
		return nil, err
	}
	if err := w.WriteAll(t.Rows); err != nil {
		return nil, err
	}
	switch enc {
	case "utf8":
		if defect.ExportWritesBom {
			return append([]byte("\xef\xbb\xbf"), b.Bytes()...), nil // planted defect: a BOM "for Excel"
		}
		return b.Bytes(), nil
	case "sjis":
		if defect.ExportSjisIbmCodes {
			return ibmCodedSJIS(b.String()) // planted defect: IBM-943-style codes for CP932's doubles
		}
		out, _, err := transform.Bytes(japanese.ShiftJIS.NewEncoder(), b.Bytes())
		if err != nil {
			return nil, fmt.Errorf("a value cannot be encoded in Shift_JIS: %v", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown export encoding %q", enc)
}

// writeExports writes every sink fail-closed and returns the receipts.
func writeExports(sinks []exportSink, temps map[string]*Table, enc string) ([]InputFile, error) {
	type staged struct {
		sink exportSink
		tmp  string
	}
	var done []staged
	cleanup := func() {
		for _, s := range done {
			_ = os.Remove(s.tmp)
		}
	}
	var receipts []InputFile
	for _, s := range sinks {
		t := temps[s.Name]
		if t == nil {
			cleanup()
			return nil, fmt.Errorf("export %s: temp table #%s was not created", s.Name, s.Name)
		}
		if defect.ExportNotAtomic {
			// planted defect: the target is truncated before the rows are encoded
			if err := os.WriteFile(s.Path, nil, 0o644); err != nil {
				cleanup()
				return nil, err
			}
		}
		data, err := encodeTable(t, enc)
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("export %s: %v", s.Name, err)
		}
		f, err := os.CreateTemp(filepath.Dir(s.Path), "."+filepath.Base(s.Path)+".*.tmp")
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("export %s: temp file: %v", s.Name, err)
		}
		done = append(done, staged{s, f.Name()})
		_, werr := f.Write(data)
		serr := f.Sync()
		cerr := f.Close()
		if werr != nil || serr != nil || cerr != nil {
			cleanup()
			return nil, fmt.Errorf("export %s: write failed", s.Name)
		}
		sum := sha256.Sum256(data)
		receipts = append(receipts, InputFile{Name: s.Name, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(data)), Rows: len(t.Rows), Encoding: enc})
	}
	for i, s := range done {
		if err := os.Rename(s.tmp, s.sink.Path); err != nil {
			for _, rest := range done[i:] {
				_ = os.Remove(rest.tmp)
			}
			return nil, fmt.Errorf("export %s: rename failed", s.sink.Name)
		}
	}
	return receipts, nil
}

// ibmCodedSJIS encodes like an IBM-943 converter: the characters CP932 holds twice get their
// IBM extension code (￢ 0xFA54, ㈱ 0xFA58) instead of CP932's (0x81CA, 0x878A). Both decode
// to the same text. Only the planted defect export-sjis-ibm-codes uses it.
func ibmCodedSJIS(text string) ([]byte, error) {
	ibm := map[rune][]byte{'￢': {0xFA, 0x54}, '㈱': {0xFA, 0x58}}
	var out []byte
	for _, r := range text {
		if code, ok := ibm[r]; ok {
			out = append(out, code...)
			continue
		}
		enc, _, err := transform.Bytes(japanese.ShiftJIS.NewEncoder(), []byte(string(r)))
		if err != nil {
			return nil, fmt.Errorf("a value cannot be encoded in Shift_JIS: %v", err)
		}
		out = append(out, enc...)
	}
	return out, nil
}
