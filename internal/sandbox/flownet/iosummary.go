package flownet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf16"
)

// The CSV IO audit summaries FlowNet keeps in an Attempt's error_message (audit record
// ATT:<attempt id>), as kSQL-FlowNet 1.0.0 writes them (the product is the judge; §1.3.3 only
// says "CSV baseline/audit JSON when inputs exist"). Four kinds, all version 1, keys in this
// order, entries sorted by source (UTF-16 code unit order, as JavaScript compares strings):
//
//   - KSQL_FLOWNET_INPUT_BASELINE {version, kind, inputs[{source, sha256, bytes}]}: written
//     into the RUNNING Attempt after the node's inputs and outputs resolved and before its
//     start marker; it stays when the Attempt ends with no valid result (no result, an
//     invalid one, a receipt mismatch, a forced kill) or with a valid result that has no
//     input_files.
//   - KSQL_FLOWNET_INPUT_AUDIT {version, kind, baseline[{source, sha256, bytes}],
//     input_files[{source, type "IMPORT", sha256 (its first 12 hex), bytes, rows,
//     encoding}]}: a valid result with input_files, for a node with inputs and no outputs.
//   - KSQL_FLOWNET_OUTPUT_AUDIT {version, kind, output_files[{sink, type "EXPORT", sha256
//     (64 hex), bytes, rows, encoding}]}: a valid result for a node with outputs and no
//     inputs (output_files as the result gave them, [] when absent).
//   - KSQL_FLOWNET_IO_AUDIT {version, kind, baseline, input_files, output_files}: a valid
//     result for a node with both.
//
// sha256 and bytes of a baseline are FlowNet's own reading of the file (resolveInputs); the
// receipts' are kSQL-Flow's. A summary is at most 10,000 characters (the baseline must leave
// room for its terminal form). Never a path, never a cell value.
//
// The resume rule reads the baseline back from the latest Attempt of the node whose
// error_message is one of INPUT_BASELINE, INPUT_AUDIT or IO_AUDIT (any other text is no
// baseline); a summary of one of those kinds with another shape is an error.

const (
	kindInputBaseline = "KSQL_FLOWNET_INPUT_BASELINE"
	kindInputAudit    = "KSQL_FLOWNET_INPUT_AUDIT"
	kindOutputAudit   = "KSQL_FLOWNET_OUTPUT_AUDIT"
	kindIOAudit       = "KSQL_FLOWNET_IO_AUDIT"

	ioSummaryMaxLength = 10_000
)

// baselineEntry is one input of a baseline.
type baselineEntry struct {
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// inputFileEntry is one input_files entry of an input or IO audit summary.
type inputFileEntry struct {
	Source   string `json:"source"`
	Type     string `json:"type"`
	SHA256   string `json:"sha256"`
	Bytes    int64  `json:"bytes"`
	Rows     int64  `json:"rows"`
	Encoding string `json:"encoding"`
}

// outputFileEntry is one output_files entry of an output or IO audit summary.
type outputFileEntry struct {
	Sink     string `json:"sink"`
	Type     string `json:"type"`
	SHA256   string `json:"sha256"`
	Bytes    int64  `json:"bytes"`
	Rows     int64  `json:"rows"`
	Encoding string `json:"encoding"`
	Path     string `json:"path,omitempty"` // only ever set by the planted defect output-audit-names-path
}

var (
	hex64            = regexp.MustCompile(`^[a-f0-9]{64}$`)
	receiptEncoding  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,32}$`)
	outputEncodings  = []string{"utf8", "sjis"}
	errSummaryTooBig = fmt.Errorf("input audit summary exceeds %d characters", ioSummaryMaxLength)
)

// safeSourceName is the rule for input and sink names in receipts and summaries.
func safeSourceName(s string) bool {
	n := len(utf16.Encode([]rune(s)))
	if n < 1 || n > 128 || s == "__net__" || strings.ContainsAny(s, ":=") {
		return false
	}
	for _, r := range s {
		if r <= 0x1f || r == 0x7f {
			return false
		}
	}
	return true
}

// lessUTF16 orders strings as JavaScript's < does (UTF-16 code units).
func lessUTF16(a, b string) bool {
	x, y := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(x, y) < 0
}

// summaryJSON is JSON.stringify's output for v (no HTML escaping), refused past the limit.
func summaryJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if len(utf16.Encode([]rune(s))) > ioSummaryMaxLength {
		return "", errSummaryTooBig
	}
	return s, nil
}

// baselineOf is the sorted baseline of the resolved inputs.
func baselineOf(ins []nodeInput) ([]baselineEntry, error) {
	out := make([]baselineEntry, 0, len(ins))
	seen := map[string]bool{}
	for _, in := range ins {
		e := baselineEntry{Source: in.Name, SHA256: in.SHA256, Bytes: in.Bytes}
		if err := checkBaselineEntry(e); err != nil {
			return nil, err
		}
		if seen[e.Source] {
			return nil, errors.New("input baseline source names must be unique")
		}
		seen[e.Source] = true
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return lessUTF16(out[i].Source, out[j].Source) })
	return out, nil
}

func checkBaselineEntry(e baselineEntry) error {
	if !safeSourceName(e.Source) || !hex64.MatchString(e.SHA256) || e.Bytes < 0 || e.Bytes > maxSafeInteger {
		return errors.New("input baseline accepts only source, SHA-256, and byte count")
	}
	return nil
}

// inputBaselineSummary is the KSQL_FLOWNET_INPUT_BASELINE summary of the resolved inputs. It
// is refused when its terminal form (an input audit summary with the longest rows and
// encoding) could not fit the field.
func inputBaselineSummary(ins []nodeInput) (string, error) {
	base, err := baselineOf(ins)
	if err != nil {
		return "", err
	}
	s, err := summaryJSON(struct {
		Version int             `json:"version"`
		Kind    string          `json:"kind"`
		Inputs  []baselineEntry `json:"inputs"`
	}{1, kindInputBaseline, base})
	if err != nil {
		return "", err
	}
	widest := make([]inputFileEntry, len(base))
	for i, b := range base {
		widest[i] = inputFileEntry{Source: b.Source, Type: "IMPORT", SHA256: b.SHA256[:12], Bytes: b.Bytes, Rows: maxSafeInteger, Encoding: strings.Repeat("x", 32)}
	}
	if _, err := summaryJSON(inputAuditDoc{1, kindInputAudit, base, widest}); err != nil {
		return "", err
	}
	return s, nil
}

type inputAuditDoc struct {
	Version    int              `json:"version"`
	Kind       string           `json:"kind"`
	Baseline   []baselineEntry  `json:"baseline"`
	InputFiles []inputFileEntry `json:"input_files"`
}

type ioAuditDoc struct {
	Version     int               `json:"version"`
	Kind        string            `json:"kind"`
	Baseline    []baselineEntry   `json:"baseline"`
	InputFiles  []inputFileEntry  `json:"input_files"`
	OutputFiles []outputFileEntry `json:"output_files"`
}

type outputAuditDoc struct {
	Version     int               `json:"version"`
	Kind        string            `json:"kind"`
	OutputFiles []outputFileEntry `json:"output_files"`
}

// inputFileEntries are the result's input receipts as summary entries, sorted by source.
func inputFileEntries(receipts []fileReceipt) ([]inputFileEntry, error) {
	out := make([]inputFileEntry, 0, len(receipts))
	for _, r := range receipts {
		if err := checkBaselineEntry(baselineEntry{Source: r.Name, SHA256: r.SHA256, Bytes: r.Bytes}); err != nil {
			return nil, err
		}
		if r.Rows < 0 || r.Rows > maxSafeInteger {
			return nil, errors.New("input receipt rows must be a non-negative integer")
		}
		if !receiptEncoding.MatchString(r.Encoding) {
			return nil, errors.New("input receipt encoding is invalid")
		}
		out = append(out, inputFileEntry{Source: r.Name, Type: "IMPORT", SHA256: r.SHA256[:12], Bytes: r.Bytes, Rows: r.Rows, Encoding: r.Encoding})
	}
	sort.SliceStable(out, func(i, j int) bool { return lessUTF16(out[i].Source, out[j].Source) })
	return out, nil
}

// outputFileEntries are the result's output receipts as summary entries, in the result's order.
func outputFileEntries(receipts []fileReceipt) ([]outputFileEntry, error) {
	out := make([]outputFileEntry, 0, len(receipts))
	seen := map[string]bool{}
	for _, r := range receipts {
		if !safeSourceName(r.Name) || !hex64.MatchString(r.SHA256) || r.Bytes < 0 || r.Bytes > maxSafeInteger ||
			r.Rows < 0 || r.Rows > maxSafeInteger || !slices.Contains(outputEncodings, r.Encoding) {
			return nil, errors.New("output receipt contains invalid audit metadata")
		}
		if seen[r.Name] {
			return nil, errors.New("output receipt sink names must be unique")
		}
		seen[r.Name] = true
		out = append(out, outputFileEntry{Sink: r.Name, Type: "EXPORT", SHA256: r.SHA256, Bytes: r.Bytes, Rows: r.Rows, Encoding: r.Encoding})
	}
	return out, nil
}

// inputAuditSummary is the KSQL_FLOWNET_INPUT_AUDIT summary: the baseline and the receipts.
func inputAuditSummary(ins []nodeInput, receipts []fileReceipt) (string, error) {
	base, err := baselineOf(ins)
	if err != nil {
		return "", err
	}
	files, err := inputFileEntries(receipts)
	if err != nil {
		return "", err
	}
	return summaryJSON(inputAuditDoc{1, kindInputAudit, base, files})
}

// outputAuditSummary is the KSQL_FLOWNET_OUTPUT_AUDIT summary of the output receipts.
func outputAuditSummary(receipts []fileReceipt) (string, error) {
	files, err := outputFileEntries(receipts)
	if err != nil {
		return "", err
	}
	return summaryJSON(outputAuditDoc{1, kindOutputAudit, files})
}

// ioAuditSummary is the KSQL_FLOWNET_IO_AUDIT summary of a node with inputs and outputs.
func ioAuditSummary(ins []nodeInput, inReceipts, outReceipts []fileReceipt) (string, error) {
	base, err := baselineOf(ins)
	if err != nil {
		return "", err
	}
	in, err := inputFileEntries(inReceipts)
	if err != nil {
		return "", err
	}
	out, err := outputFileEntries(outReceipts)
	if err != nil {
		return "", err
	}
	return summaryJSON(ioAuditDoc{1, kindIOAudit, base, in, out})
}

// parseStoredBaseline reads the baseline back from an Attempt's error_message: ok false when
// the text is no baseline summary (not JSON, another kind, too long), an error when it is of
// a baseline kind but not of its exact shape.
func parseStoredBaseline(summary string) (base []baselineEntry, ok bool, err error) {
	if summary == "" || len(utf16.Encode([]rune(summary))) > ioSummaryMaxLength {
		return nil, false, nil
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal([]byte(summary), &doc) != nil || doc == nil {
		return nil, false, nil
	}
	var kind string
	_ = json.Unmarshal(doc["kind"], &kind)
	var keys []string
	list := "baseline"
	switch kind {
	case kindIOAudit:
		keys = []string{"version", "kind", "baseline", "input_files", "output_files"}
	case kindInputAudit:
		keys = []string{"version", "kind", "baseline", "input_files"}
	case kindInputBaseline:
		keys, list = []string{"version", "kind", "inputs"}, "inputs"
	default:
		return nil, false, nil
	}
	if !sameKeys(doc, keys) {
		return nil, true, fmt.Errorf("%s summary has unknown fields", kind)
	}
	var version float64
	var entries []json.RawMessage
	if json.Unmarshal(doc["version"], &version) != nil || version != 1 || json.Unmarshal(doc[list], &entries) != nil || entries == nil {
		return nil, true, fmt.Errorf("%s summary has an invalid version or %s", kind, list)
	}
	seen := map[string]bool{}
	for _, raw := range entries {
		var m map[string]json.RawMessage
		var e baselineEntry
		if json.Unmarshal(raw, &m) != nil || !sameKeys(m, []string{"source", "sha256", "bytes"}) || json.Unmarshal(raw, &e) != nil {
			return nil, true, errors.New("input baseline entry has an invalid shape")
		}
		if err := checkBaselineEntry(e); err != nil {
			return nil, true, err
		}
		if len(base) > 0 && !lessUTF16(base[len(base)-1].Source, e.Source) && base[len(base)-1].Source != e.Source {
			return nil, true, errors.New("input baseline entries are not in canonical source order")
		}
		if seen[e.Source] {
			return nil, true, errors.New("input baseline source names must be unique")
		}
		seen[e.Source] = true
		base = append(base, e)
	}
	return base, true, nil
}

func sameKeys(m map[string]json.RawMessage, keys []string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// baselinesEqual says whether a stored baseline names exactly the current inputs (sources,
// sha256, bytes).
func baselinesEqual(stored []baselineEntry, ins []nodeInput) bool {
	cur, err := baselineOf(ins)
	if err != nil || len(cur) != len(stored) {
		return false
	}
	for i := range cur {
		if cur[i] != stored[i] {
			return false
		}
	}
	return true
}

// fileReceiptsInvalid checks a result's input_files and output_files where present (§7:
// {name, sha256, bytes, rows, encoding}): an array of objects with a safe unique name, a
// 64-hex sha256, non-negative integer bytes and rows, and an encoding (utf8 or sjis for an
// output, a 1-32 character token for an input); an output entry has exactly those keys. A
// result that breaks it is INVALID_EXECUTION_RESULT.
func fileReceiptsInvalid(raw []byte) error {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil {
		return nil // the rest of the validation refuses it
	}
	for _, field := range []string{"input_files", "output_files"} {
		v, present := doc[field]
		if !present {
			continue
		}
		output := field == "output_files"
		var list []map[string]json.RawMessage
		if json.Unmarshal(v, &list) != nil || list == nil {
			return fmt.Errorf("%s must contain safe %s receipt entries", field, strings.TrimSuffix(field, "_files"))
		}
		names := map[string]bool{}
		for _, e := range list {
			if !receiptEntryOK(e, output) {
				return fmt.Errorf("%s must contain safe %s receipt entries", field, strings.TrimSuffix(field, "_files"))
			}
			var name string
			_ = json.Unmarshal(e["name"], &name)
			if names[name] {
				return fmt.Errorf("%s must contain safe %s receipt entries", field, strings.TrimSuffix(field, "_files"))
			}
			names[name] = true
		}
	}
	return nil
}

func receiptEntryOK(e map[string]json.RawMessage, output bool) bool {
	if e == nil || (output && !sameKeys(e, []string{"name", "sha256", "bytes", "rows", "encoding"})) {
		return false
	}
	var name, sha, enc string
	if json.Unmarshal(e["name"], &name) != nil || !safeSourceName(name) ||
		json.Unmarshal(e["sha256"], &sha) != nil || !hex64.MatchString(sha) ||
		json.Unmarshal(e["encoding"], &enc) != nil {
		return false
	}
	for _, k := range []string{"bytes", "rows"} {
		var n float64
		if v, ok := e[k]; !ok || string(v) == "null" || json.Unmarshal(e[k], &n) != nil || n < 0 || n > maxSafeInteger || n != float64(int64(n)) {
			return false
		}
	}
	if output {
		return slices.Contains(outputEncodings, enc)
	}
	return receiptEncoding.MatchString(enc)
}
