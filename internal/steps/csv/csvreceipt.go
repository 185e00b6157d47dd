package csv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// csvReceiptDomain: what FlowNet's attempts record of the CSV files: the IO audit summaries
// of kSQL-FlowNet 1.0.0 (KSQL_FLOWNET_INPUT_AUDIT, _OUTPUT_AUDIT, _IO_AUDIT, and the
// _INPUT_BASELINE of an attempt no receipt confirmed; in the latest attempt's error_message)
// compared with the input the harness wrote and the file on disk, and a rerun's export
// against the first one.
type csvReceiptDomain struct{}

func (d csvReceiptDomain) register(reg stepdef.Registry) {
	reg.Step(`^the input audit summary of node "([^"]+)" records input "([^"]+)" with the CSV input's sha256 and size, (\d+) rows and encoding "([^"]+)"$`, d.inputAuditSummary)
	reg.Step(`^the input baseline of node "([^"]+)" records input "([^"]+)" as the CSV input was before the rewrite$`, d.baselineBeforeRewrite)
	reg.Step(`^the output audit summary of node "([^"]+)" records sink "([^"]+)" with (\d+) rows, encoding "([^"]+)" and a size above 0$`, d.outputAuditSummary)
	reg.Step(`^the sha256 of the exported "([^"]+)" file is the one in the output audit summary of node "([^"]+)"$`, d.exportedSHAIsReceipt)
	reg.Step(`^the exported "([^"]+)" file and its receipt have the sha256 of the first export$`, d.sameAsFirstExport)
}

// csvReceiptState is, by sinkKey, the receipt sha256 last read from an output audit summary
// and the sha256 of the first export.
type csvReceiptState struct {
	receipts, first map[string]string
	sizes           map[string]int64 // by sinkKey, the receipt's bytes
}

var csvReceiptKey = scenario.NewKey[csvReceiptState]("csv-receipt")

// The IO audit summaries as kSQL-FlowNet 1.0.0 keeps them in an attempt's error_message
// (dist/io/input-baseline.js, dist/executor/attempt-executor.js), all version 1, each with
// exactly these keys:
//   - KSQL_FLOWNET_INPUT_BASELINE {version, kind, inputs[{source, sha256, bytes}]}: taken
//     before the child starts; it stays when no valid result confirmed the input;
//   - KSQL_FLOWNET_INPUT_AUDIT {version, kind, baseline[…], input_files[{source, type
//     "IMPORT", sha256 (its first 12 hex), bytes, rows, encoding}]}: a node with inputs only;
//   - KSQL_FLOWNET_OUTPUT_AUDIT {version, kind, output_files[{sink, type "EXPORT", sha256,
//     bytes, rows, encoding}]}: a node with outputs only;
//   - KSQL_FLOWNET_IO_AUDIT {version, kind, baseline, input_files, output_files}: a node
//     with both.
//
// Which kind a node's summary must be follows from the rendered network (its inputs and
// outputs). S§2.8.2 and S§2.9.2 back the kinds, the input's source, rows, encoding and
// 64-hex baseline sha256, the sink, sha256, rows, encoding and bytes > 0; §1.3.3 "CSV
// baseline/audit JSON when inputs exist".
const (
	kindInputBaseline = "KSQL_FLOWNET_INPUT_BASELINE"
	kindInputAudit    = "KSQL_FLOWNET_INPUT_AUDIT"
	kindOutputAudit   = "KSQL_FLOWNET_OUTPUT_AUDIT"
	kindIOAudit       = "KSQL_FLOWNET_IO_AUDIT"
)

// summaryKeys are the keys of each kind of summary, sorted.
var summaryKeys = map[string]string{
	kindInputBaseline: "inputs,kind,version",
	kindInputAudit:    "baseline,input_files,kind,version",
	kindOutputAudit:   "kind,output_files,version",
	kindIOAudit:       "baseline,input_files,kind,output_files,version",
}

// ioSummary is a decoded summary: its keys, and each list's entries as raw maps.
type ioSummary struct {
	top   map[string]json.RawMessage
	which string // "input" or "output", for the assertions' names
}

// sortedKeys is the keys of m, sorted and joined by commas.
func sortedKeys(m map[string]json.RawMessage) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// readIOSummary reads the latest attempt summary of node name and checks its kind (one of
// kinds), its exact keys and its version.
func readIOSummary(ctx context.Context, name, which string, kinds ...string) (*ioSummary, error) {
	var top map[string]json.RawMessage
	if err := latestAttemptSummary(ctx, name, &top); err != nil {
		return nil, err
	}
	sc := kit.SceneOf(ctx)
	var kind string
	_ = json.Unmarshal(top["kind"], &kind)
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Assert("kind of the "+which+" audit summary of node "+name, strings.Join(kinds, " or "), kit.OrNone(kind), slices.Contains(kinds, kind)); err != nil {
		return nil, err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("keys of the "+which+" audit summary of node "+name, summaryKeys[kind], sortedKeys(top)); err != nil {
		return nil, err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("version of the "+which+" audit summary of node "+name, "1", kit.OrNone(string(top["version"]))); err != nil {
		return nil, err
	}
	return &ioSummary{top: top, which: which}, nil
}

// entries decodes the list under key into its entries, asserting that it is a list whose
// entries are named by field ("source" or "sink") exactly as want, each with exactly keys.
func (s *ioSummary) entries(sc *kit.Scene, key, field, want, keys string) ([]map[string]json.RawMessage, error) {
	var list []map[string]json.RawMessage
	jerr := json.Unmarshal(s.top[key], &list)
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Assert(key+" of the "+s.which+" audit summary is a list of objects", "list", kit.FirstLineOrNone(string(s.top[key])), jerr == nil && list != nil); err != nil {
		return nil, err
	}
	var names []string
	for _, e := range list {
		names = append(names, rawStr(e[field]))
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal(field+"s of "+key+" of the "+s.which+" audit summary", want, strings.Join(names, ",")); err != nil {
		return nil, err
	}
	for _, e := range list {
		if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("keys of the "+key+" entry "+rawStr(e[field]), keys, sortedKeys(e)); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// rawStr is a JSON string value, or the raw JSON when it is none ("none" when absent).
func rawStr(raw json.RawMessage) string {
	var v string
	if json.Unmarshal(raw, &v) == nil {
		return v
	}
	return kit.OrNone(string(raw))
}

// rawInt is a JSON integer value as text, or the raw JSON when it is none.
func rawInt(raw json.RawMessage) string {
	var v int64
	if json.Unmarshal(raw, &v) == nil {
		return strconv.FormatInt(v, 10)
	}
	return kit.OrNone(string(raw))
}

// csvNodeNamed is the fixture's node name as the current network's rendered file (the
// working copy FlowNet ran) has it.
func csvNodeNamed(fx *kit.FixtureState, name string) (csvNode, error) {
	rn, err := fx.Node(name)
	if err != nil {
		return csvNode{}, err
	}
	n, nodes, err := renderedCSVNodes(fx)
	if err != nil {
		return csvNode{}, err
	}
	for _, nd := range nodes {
		if nd.ID == rn.ID {
			return nd, nil
		}
	}
	return csvNode{}, fmt.Errorf("network %s has no node %q", n.FixtureNetworkID, name)
}

// checkBaseline compares the baseline entries (source, sha256, bytes) with the file.
func checkBaseline(sc *kit.Scene, list []map[string]json.RawMessage, input, sha string, size int) error {
	b := list[0]
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("baseline sha256 of input "+input+" (the file the harness wrote)", sha, rawStr(b["sha256"])); err != nil {
		return err
	}
	return sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("baseline bytes of input "+input, strconv.Itoa(size), rawInt(b["bytes"]))
}

func (csvReceiptDomain) inputAuditSummary(ctx context.Context, name, input string, rows int, encoding string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	_, sha, size := csvIOKey.Of(sc.St).inputFile()
	if sha == "" {
		return fmt.Errorf("no CSV input was written in this scenario")
	}
	nd, err := csvNodeNamed(fx, name)
	if err != nil {
		return err
	}
	kind := kindInputAudit
	if len(nd.Outputs) > 0 {
		kind = kindIOAudit
	}
	sum, err := readIOSummary(ctx, name, "input", kind)
	if err != nil {
		return err
	}
	base, err := sum.entries(sc, "baseline", "source", input, "bytes,sha256,source")
	if err != nil {
		return err
	}
	if err := checkBaseline(sc, base, input, sha, size); err != nil {
		return err
	}
	files, err := sum.entries(sc, "input_files", "source", input, "bytes,encoding,rows,sha256,source,type")
	if err != nil {
		return err
	}
	in := files[0]
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("type of input "+input, "IMPORT", rawStr(in["type"])); err != nil {
		return err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("receipt sha256 of input "+input+" (the first 12 hex of the file's)", sha[:12], rawStr(in["sha256"])); err != nil {
		return err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("receipt bytes of input "+input, strconv.Itoa(size), rawInt(in["bytes"])); err != nil {
		return err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("rows of input "+input, strconv.Itoa(rows), rawInt(in["rows"])); err != nil {
		return err
	}
	return sameEncoding(sc, "encoding of input "+input, encoding, rawStr(in["encoding"]))
}

// baselineBeforeRewrite: the latest attempt of the node recorded as its input baseline the
// CSV input as it was before the rewrite, so a resume has the original file to compare with
// (S§2.8.3). The attempt ended without or with a confirming receipt, so its summary is the
// baseline or the input audit summary.
func (csvReceiptDomain) baselineBeforeRewrite(ctx context.Context, name, input string) error {
	sc := kit.SceneOf(ctx)
	s := csvIOKey.Of(sc.St)
	beforeSHA, beforeSize := s.rewrittenFrom()
	_, nowSHA, _ := s.inputFile()
	if beforeSHA == "" {
		return fmt.Errorf("the CSV input was not rewritten in this scenario")
	}
	sum, err := readIOSummary(ctx, name, "input", kindInputBaseline, kindInputAudit)
	if err != nil {
		return err
	}
	key := "baseline"
	if rawStr(sum.top["kind"]) == kindInputBaseline {
		key = "inputs"
	}
	base, err := sum.entries(sc, key, "source", input, "bytes,sha256,source")
	if err != nil {
		return err
	}
	if err := checkBaseline(sc, base, input, beforeSHA, beforeSize); err != nil {
		return err
	}
	return sc.St.On("file.input.sha256").Assert("sha256 of the rewritten CSV input against the baseline", "differs from "+beforeSHA, nowSHA, nowSHA != beforeSHA)
}

// sameEncoding compares an encoding name case-insensitively: kSQL-Flow 0.9.0 writes an
// input's encoding as UTF8 / SJIS, scenarios.md writes it utf8 in one place and UTF8 in another.
func sameEncoding(sc *kit.Scene, what, want, seen string) error {
	return sc.St.On("audit.NODE_ATTEMPT.error_message").Assert(what+" (any case)", want, seen, strings.EqualFold(want, seen))
}

var hex64 = regexp.MustCompile(`^[a-f0-9]{64}$`)

func (csvReceiptDomain) outputAuditSummary(ctx context.Context, name, sink string, rows int, encoding string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvReceiptKey.Of(sc.St)
	if _, err := csvExportKey.Of(sc.St).outputPath(sc, fx, sink); err != nil {
		return err
	}
	nd, err := csvNodeNamed(fx, name)
	if err != nil {
		return err
	}
	kind := kindOutputAudit
	if len(nd.Inputs) > 0 {
		kind = kindIOAudit
	}
	sum, err := readIOSummary(ctx, name, "output", kind)
	if err != nil {
		return err
	}
	files, err := sum.entries(sc, "output_files", "sink", sink, "bytes,encoding,rows,sha256,sink,type")
	if err != nil {
		return err
	}
	o := files[0]
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("type of sink "+sink, "EXPORT", rawStr(o["type"])); err != nil {
		return err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("rows of sink "+sink, strconv.Itoa(rows), rawInt(o["rows"])); err != nil {
		return err
	}
	// kSQL-FlowNet takes only utf8 or sjis, in lower case, for an output.
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("encoding of sink "+sink, encoding, rawStr(o["encoding"])); err != nil {
		return err
	}
	var size int64
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Assert("bytes of sink "+sink, "> 0", rawInt(o["bytes"]), json.Unmarshal(o["bytes"], &size) == nil && size > 0); err != nil {
		return err
	}
	sha := rawStr(o["sha256"])
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Assert("sha256 of sink "+sink, "64 hex", sha, hex64.MatchString(sha)); err != nil {
		return err
	}
	if s.receipts == nil {
		s.receipts, s.first, s.sizes = map[string]string{}, map[string]string{}, map[string]int64{}
	}
	s.receipts[sinkKey(fx, sink)] = sha
	s.sizes[sinkKey(fx, sink)] = size
	return nil
}

func (csvReceiptDomain) exportedSHAIsReceipt(ctx context.Context, sink, name string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvReceiptKey.Of(sc.St)
	p, err := csvExportKey.Of(sc.St).outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	rc := s.receipts[sinkKey(fx, sink)]
	if rc == "" {
		return fmt.Errorf("no output audit summary of node %s was read for sink %s (missing the output audit step)", name, sink)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if s.first[sinkKey(fx, sink)] == "" {
		s.first[sinkKey(fx, sink)] = digest(data)
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message", "file.export.sha256").Equal("sha256 of the exported "+sink+" file against the receipt of node "+name, rc, digest(data)); err != nil {
		return err
	}
	return sc.St.On("audit.NODE_ATTEMPT.error_message", "file.export.bytes").Equal("bytes of the exported "+sink+" file against the receipt of node "+name, s.sizes[sinkKey(fx, sink)], int64(len(data)))
}

func (csvReceiptDomain) sameAsFirstExport(ctx context.Context, sink string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvReceiptKey.Of(sc.St)
	p, err := csvExportKey.Of(sc.St).outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	first := s.first[sinkKey(fx, sink)]
	if first == "" {
		return fmt.Errorf("the first export of %s was not checked against its receipt", sink)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := sc.St.On("audit.NODE_ATTEMPT.error_message").Equal("receipt sha256 of sink "+sink+" against the first export", first, s.receipts[sinkKey(fx, sink)]); err != nil {
		return err
	}
	return sc.St.On("file.export.sha256").Equal("sha256 of the exported "+sink+" file against the first export", first, digest(data))
}

// latestAttemptSummary decodes the JSON audit summary FlowNet keeps in the error_message of a
// node's latest attempt into sum, asserting that the attempt exists and the field is JSON.
func latestAttemptSummary(ctx context.Context, name string, sum any) error {
	a, err := kit.LatestAttemptOf(ctx, name)
	if err != nil {
		return err
	}
	msg := a.ErrorMessage
	jerr := json.Unmarshal([]byte(msg), sum)
	return kit.SceneOf(ctx).St.On("audit.NODE_ATTEMPT.error_message").Assert("error_message of the latest attempt of "+name+" is a JSON summary", "JSON", kit.FirstLineOrNone(msg), jerr == nil)
}
