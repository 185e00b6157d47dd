package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/stepdef"
)

// csvReceiptDomain: what FlowNet's attempts record of the CSV files: the
// KSQL_FLOWNET_INPUT_AUDIT and KSQL_FLOWNET_OUTPUT_AUDIT v1 summaries (in the latest
// attempt's error_message) compared with the input the harness wrote and the file on disk,
// and a rerun's export against the first one.
type csvReceiptDomain struct{}

func (d csvReceiptDomain) register(reg stepdef.Registry) {
	reg.Step(`^the input audit summary of node "([^"]+)" records input "([^"]+)" with the CSV input's sha256 and size, (\d+) rows and encoding "([^"]+)"$`, d.inputAuditSummary)
	reg.Step(`^the output audit summary of node "([^"]+)" records sink "([^"]+)" with (\d+) rows, encoding "([^"]+)" and a size above 0$`, d.outputAuditSummary)
	reg.Step(`^the sha256 of the exported "([^"]+)" file is the one in the output audit summary of node "([^"]+)"$`, d.exportedSHAIsReceipt)
	reg.Step(`^the exported "([^"]+)" file and its receipt have the sha256 of the first export$`, d.sameAsFirstExport)
}

// csvReceiptState is, by sinkKey, the receipt sha256 last read from an output audit summary
// and the sha256 of the first export.
type csvReceiptState struct {
	receipts, first map[string]string
}

var csvReceiptKey = scenario.NewKey[csvReceiptState]("csv-receipt")

// inputAudit is the KSQL_FLOWNET_INPUT_AUDIT v1 summary as the steps read it. Backed are its
// kind, the input's name, rows, encoding and baseline sha256 (scenarios.md §2.8.2); the key
// names version, baseline_sha256 and bytes are the sandbox's, so an entry is read as a map:
// the sha256 under any key, version and bytes only when present.
type inputAudit struct {
	auditHeader
	Inputs []map[string]any `json:"inputs"`
}

func (csvReceiptDomain) inputAuditSummary(ctx context.Context, name, input string, rows int, encoding string) error {
	sc := sceneOf(ctx)
	_, sha, size := csvIOKey.Of(sc.st).inputFile()
	var sum inputAudit
	if err := readAuditSummary(ctx, name, "input", "KSQL_FLOWNET_INPUT_AUDIT", &sum, &sum.auditHeader); err != nil {
		return err
	}
	var names []string
	for _, in := range sum.Inputs {
		names = append(names, str(in["name"]))
	}
	if err := sc.st.Equal("inputs of the input audit summary", input, strings.Join(names, ",")); err != nil {
		return err
	}
	in := sum.Inputs[0]
	shaKey := ""
	for k, v := range in {
		if str(v) == sha {
			shaKey = k
		}
	}
	if err := sc.st.Assert("baseline sha256 of input "+input+" (the file the harness wrote), under any key", sha, orNone(shaKey), shaKey != ""); err != nil {
		return err
	}
	if b, ok := in["bytes"]; ok {
		if err := sc.st.Equal("bytes of input "+input, fmt.Sprint(size), fmt.Sprint(b)); err != nil {
			return err
		}
	} else {
		sc.st.Note("input audit summary", "no bytes key (not required by the original)")
	}
	got := "none"
	if r, ok := in["rows"].(float64); ok {
		got = fmt.Sprint(r)
	}
	if err := sc.st.Equal("rows of input "+input, fmt.Sprint(rows), got); err != nil {
		return err
	}
	return sameEncoding(sc, "encoding of input "+input, encoding, str(in["encoding"]))
}

// auditHeader is what the input and output audit summaries both start with.
type auditHeader struct {
	Kind    string `json:"kind"`
	Version *int   `json:"version"`
}

// readAuditSummary reads the latest attempt summary of name into sum (whose header is h) and
// checks the header: the kind, and the version when there is one.
func readAuditSummary(ctx context.Context, name, which, kind string, sum any, h *auditHeader) error {
	if err := latestAttemptSummary(ctx, name, sum); err != nil {
		return err
	}
	sc := sceneOf(ctx)
	if err := sc.st.Equal("kind of the "+which+" audit summary", kind, h.Kind); err != nil {
		return err
	}
	return optionalVersion(sc, which, h.Version)
}

// optionalVersion checks the summary's version when it has one (the key is the sandbox's).
func optionalVersion(sc *scene, which string, v *int) error {
	if v == nil {
		sc.st.Note(which+" audit summary", "no version key (not required by the original)")
		return nil
	}
	return sc.st.Equal("version of the "+which+" audit summary", 1, *v)
}

// sameEncoding compares an encoding name case-insensitively: scenarios.md writes the same
// summary's encoding `utf8` in one place and `UTF8` in another.
func sameEncoding(sc *scene, what, want, seen string) error {
	return sc.st.Assert(what+" (any case)", want, seen, strings.EqualFold(want, seen))
}

// outputAudit is the KSQL_FLOWNET_OUTPUT_AUDIT v1 summary as the steps read it: its entries'
// keys are those of the contract's output_files ({name, sha256, bytes, rows, encoding}, §7).
type outputAudit struct {
	auditHeader
	Outputs []struct {
		Name     string `json:"name"`
		SHA256   string `json:"sha256"`
		Bytes    int64  `json:"bytes"`
		Rows     int    `json:"rows"`
		Encoding string `json:"encoding"`
	} `json:"outputs"`
}

func (csvReceiptDomain) outputAuditSummary(ctx context.Context, name, sink string, rows int, encoding string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvReceiptKey.Of(sc.st)
	if _, err := csvExportKey.Of(sc.st).outputPath(sc, fx, sink); err != nil {
		return err
	}
	var sum outputAudit
	if err := readAuditSummary(ctx, name, "output", "KSQL_FLOWNET_OUTPUT_AUDIT", &sum, &sum.auditHeader); err != nil {
		return err
	}
	var names []string
	for _, o := range sum.Outputs {
		names = append(names, o.Name)
	}
	if err := sc.st.Equal("output sinks of the output audit summary", sink, strings.Join(names, ",")); err != nil {
		return err
	}
	o := sum.Outputs[0]
	if err := sc.st.Equal("rows of sink "+sink, rows, o.Rows); err != nil {
		return err
	}
	if err := sameEncoding(sc, "encoding of sink "+sink, encoding, o.Encoding); err != nil {
		return err
	}
	if err := sc.st.Assert("bytes of sink "+sink, "> 0", o.Bytes, o.Bytes > 0); err != nil {
		return err
	}
	if err := sc.st.Assert("sha256 of sink "+sink, "64 hex", o.SHA256, len(o.SHA256) == 64); err != nil {
		return err
	}
	if s.receipts == nil {
		s.receipts, s.first = map[string]string{}, map[string]string{}
	}
	s.receipts[sinkKey(fx, sink)] = o.SHA256
	return nil
}

func (csvReceiptDomain) exportedSHAIsReceipt(ctx context.Context, sink, name string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvReceiptKey.Of(sc.st)
	p, err := csvExportKey.Of(sc.st).outputPath(sc, fx, sink)
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
	return sc.st.Equal("sha256 of the exported "+sink+" file against the receipt of node "+name, rc, digest(data))
}

func (csvReceiptDomain) sameAsFirstExport(ctx context.Context, sink string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvReceiptKey.Of(sc.st)
	p, err := csvExportKey.Of(sc.st).outputPath(sc, fx, sink)
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
	if err := sc.st.Equal("receipt sha256 of sink "+sink+" against the first export", first, s.receipts[sinkKey(fx, sink)]); err != nil {
		return err
	}
	return sc.st.Equal("sha256 of the exported "+sink+" file against the first export", first, digest(data))
}

// latestAttemptSummary decodes the JSON audit summary FlowNet keeps in the error_message of a
// node's latest attempt into sum, asserting that the attempt exists and the field is JSON.
func latestAttemptSummary(ctx context.Context, name string, sum any) error {
	a, err := latestAttemptOf(ctx, name)
	if err != nil {
		return err
	}
	msg := a.ErrorMessage
	jerr := json.Unmarshal([]byte(msg), sum)
	return sceneOf(ctx).st.Assert("error_message of the latest attempt of "+name+" is a JSON summary", "JSON", firstLineOrNone(msg), jerr == nil)
}
