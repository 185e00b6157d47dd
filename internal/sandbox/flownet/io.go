package flownet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// CSV inputs (product-contract.md §5 inputs, §1.3.3, §7 --import-csv). Decisions where the
// contract is silent:
//   - An input template is relative to <KSQL_FLOWNET_IO_DIR>/in; each placeholder value
//     ({business_key}, {profile}) is percent-encoded as ONE path segment (url.PathEscape,
//     which also encodes "/"), and a "." or ".." segment, an absolute template, a NUL or an
//     unknown placeholder is INPUT_PATH_REJECTED.
//   - The resolved path, and the deepest existing ancestor of it, are resolved through
//     symlinks/junctions; if that real path leaves the real IO root the input is
//     INPUT_PATH_REJECTED, else a path that does not exist is INPUT_FILE_MISSING.
//   - Both are decided after the Attempt is created and before its start marker: the
//     Attempt ends FAILED with the code, no kSQL-Flow child is started, the node is FAILED.
//   - The input's sha256 and size are its baseline, written into the RUNNING Attempt before
//     its start marker (KSQL_FLOWNET_INPUT_BASELINE); kSQL-Flow gets --import-csv
//     name=<abs path> and --expected-import-sha256 name=<baseline>; a valid result (of any
//     status) whose input_files receipts are missing or do not name exactly the baselines'
//     sources, sha256 and bytes is UNKNOWN / INVALID_EXECUTION_RESULT (§1.3.3), as in
//     kSQL-FlowNet 1.0.0.
//   - The Attempt's error_message ends as the IO audit summary of iosummary.go
//     (KSQL_FLOWNET_INPUT_AUDIT, _IO_AUDIT, or the baseline when no valid result confirmed
//     it): never a path, never a cell value.

// Codes of the input and output rules.
const (
	codeInputPathRejected  = "INPUT_PATH_REJECTED"
	codeInputFileMissing   = "INPUT_FILE_MISSING"
	codeInputFileMutated   = "INPUT_FILE_MUTATED"
	codeOutputPathRejected = "OUTPUT_PATH_REJECTED"
)

// nodeInput is one resolved input of a node.
type nodeInput struct {
	Name, Path, SHA256 string
	Bytes              int64
}

// ioDir is KSQL_FLOWNET_IO_DIR, which must be an existing absolute directory.
func (c *cli) ioDir() (string, error) {
	d := c.getenv("KSQL_FLOWNET_IO_DIR")
	if !filepath.IsAbs(d) {
		return "", coded(codeConfigMissing, "KSQL_FLOWNET_IO_DIR must be an absolute directory, got %q", d)
	}
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return "", coded(codeConfigMissing, "KSQL_FLOWNET_IO_DIR %q is not an existing directory", d)
	}
	return d, nil
}

// expandIOPath applies the template rules and returns the path below base.
func expandIOPath(base, tmpl string, vals map[string]string) (string, error) {
	if tmpl == "" || strings.ContainsRune(tmpl, 0) || filepath.IsAbs(tmpl) || strings.HasPrefix(tmpl, "/") || strings.Contains(tmpl, `\`) {
		return "", coded(codeInputPathRejected, "template is empty, absolute or holds NUL or a backslash")
	}
	var bad error
	expanded := placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := vals[name]
		if !ok {
			bad = coded(codeInputPathRejected, "unknown placeholder {%s}", name)
			return ""
		}
		return url.PathEscape(v)
	})
	if bad != nil {
		return "", bad
	}
	segs := strings.Split(expanded, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", coded(codeInputPathRejected, "the path has an empty, \".\" or \"..\" segment")
		}
	}
	return filepath.Join(append([]string{base}, segs...)...), nil
}

// within says whether p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// realPath resolves links in p, or in its deepest existing ancestor (the rest appended).
func realPath(p string) (real string, exists bool, err error) {
	rest := ""
	cur := p
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			if defect.IoPathLinksUnchecked {
				r = cur // planted defect: links are not resolved before the root check
			}
			return filepath.Join(r, rest), rest == "", nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", false, err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, false, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// resolveInputs applies the path rules to every input of a node and takes the baselines.
func resolveInputs(ioDir string, nd Node, vals map[string]string) ([]nodeInput, error) {
	root := filepath.Join(ioDir, "in")
	realRoot, _, err := realPath(root)
	if err != nil {
		return nil, coded(codeInputPathRejected, "IO root: %v", err)
	}
	names := slices.Sorted(maps.Keys(nd.Inputs))
	var out []nodeInput
	for _, name := range names {
		p, err := expandIOPath(root, nd.Inputs[name], vals)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", name, err)
		}
		real, exists, err := realPath(p)
		if err != nil {
			return nil, coded(codeInputPathRejected, "input %s: %v", name, err)
		}
		if !within(realRoot, real) {
			return nil, coded(codeInputPathRejected, "input %s resolves outside the IO root", name)
		}
		if !exists {
			// The real FlowNet's words: it finds the missing file walking the path's
			// components.
			return nil, coded(codeInputFileMissing, "input path component is unavailable")
		}
		data, err := os.ReadFile(real)
		if err != nil {
			return nil, coded(codeInputFileMissing, "input %s cannot be read", name)
		}
		sum := sha256.Sum256(data)
		out = append(out, nodeInput{Name: name, Path: real, SHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(data))})
	}
	return out, nil
}

// inputArgs are the kSQL-Flow run flags for the inputs.
func inputArgs(ins []nodeInput) []string {
	var a []string
	for _, in := range ins {
		a = append(a, "--import-csv", in.Name+"="+in.Path, "--expected-import-sha256", in.Name+"="+in.SHA256)
	}
	return a
}

// fileReceipt is one input_files / output_files entry of the Execution Result.
type fileReceipt struct {
	Name     string `json:"name"`
	SHA256   string `json:"sha256"`
	Bytes    int64  `json:"bytes"`
	Rows     int64  `json:"rows"`
	Encoding string `json:"encoding"`
}

// receiptList reads one receipt list of the raw result: present is whether the key is there
// (fileReceiptsInvalid has already refused a malformed one as an invalid result).
func receiptList(raw []byte, field string) (list []fileReceipt, present bool) {
	var doc map[string]json.RawMessage
	if raw == nil || json.Unmarshal(raw, &doc) != nil {
		return nil, false
	}
	v, present := doc[field]
	if !present {
		return nil, false
	}
	_ = json.Unmarshal(v, &list)
	return list, true
}

// receiptsConfirmBaseline says whether the input receipts name exactly the baselines (the same
// sources, sha256 and bytes: kSQL-FlowNet 1.0.0 compares the lists whole).
func receiptsConfirmBaseline(ins []nodeInput, got []fileReceipt) bool {
	if len(got) != len(ins) {
		return false
	}
	want := map[string]nodeInput{}
	for _, in := range ins {
		want[in.Name] = in
	}
	for _, r := range got {
		in, ok := want[r.Name]
		if !ok || r.SHA256 != in.SHA256 || r.Bytes != in.Bytes {
			return false
		}
		delete(want, r.Name)
	}
	return len(want) == 0
}

// receiptsNameSinks says whether the output receipts name configured sinks only, each once,
// in the sinks' sorted order (a receipt list may leave a sink out).
func receiptsNameSinks(outs []nodeOutput, got []fileReceipt) bool {
	names := make([]string, len(outs))
	for i, o := range outs {
		names[i] = o.Name
	}
	sort.Strings(names)
	prev := -1
	for _, r := range got {
		i := slices.Index(names, r.Name)
		if i <= prev {
			return false
		}
		prev = i
	}
	return true
}

// exportsMatchDisk says whether every configured sink has a receipt whose sha256 and bytes
// are those of the file on disk (this sandbox's own check of a SUCCESS export, stricter than
// kSQL-FlowNet 1.0.0, which trusts the receipt).
func exportsMatchDisk(outs []nodeOutput, got []fileReceipt) bool {
	for _, o := range outs {
		i := slices.IndexFunc(got, func(r fileReceipt) bool { return r.Name == o.Name })
		data, err := os.ReadFile(o.Path)
		sum := sha256.Sum256(data)
		if i < 0 || err != nil || hex.EncodeToString(sum[:]) != got[i].SHA256 || int64(len(data)) != got[i].Bytes {
			return false
		}
	}
	return true
}

// recordInputBaseline writes the KSQL_FLOWNET_INPUT_BASELINE summary into the RUNNING
// Attempt, after its inputs and outputs resolved and before its start marker (iosummary.go).
func (e *execution) recordInputBaseline(ctx context.Context, att *attemptRec, ins []nodeInput) error {
	summary, err := inputBaselineSummary(ins)
	if err != nil {
		return fmt.Errorf("input baseline of Attempt %s: %w", att.id, err)
	}
	if att.rev, err = e.st.update(ctx, e.st.auditApp, att.key, vals(map[string]any{"error_message": summary}), att.rev); err != nil {
		return fmt.Errorf("record the input baseline of Attempt %s: %w", att.id, err)
	}
	return nil
}

// settleIO checks the result's receipts (any valid result, not only a SUCCESS one) and
// puts the node's IO audit summary into the Attempt's error_message (iosummary.go says which
// kind when). A receipt that does not confirm the baselines or names a sink that is not
// configured makes the result invalid: UNKNOWN / INVALID_EXECUTION_RESULT (§1.3.3). Nodes
// without inputs or outputs keep their error_message.
func (e *execution) settleIO(ins []nodeInput, outs []nodeOutput, rr runResult, obs Observation, out Outcome, fields map[string]any) (Outcome, error) {
	valid := obs.Result != nil && !rr.ForcedKill
	inList, inPresent := receiptList(rr.ResultRaw, "input_files")
	outList, outPresent := receiptList(rr.ResultRaw, "output_files")
	invalid := func() {
		valid = false
		out = Outcome{AttemptStatus: StatusUnknown, AttemptCode: CodeInvalidResult, NodeStatus: StatusUnknown, NodeReason: CodeInvalidResult}
		fields["status"], fields["result_code"] = out.AttemptStatus, out.AttemptCode
	}
	if valid && len(ins) > 0 && (!inPresent || !receiptsConfirmBaseline(ins, inList)) {
		invalid()
	}
	switch {
	case valid && len(outs) > 0:
		if !outPresent || !receiptsNameSinks(outs, outList) || (out.AttemptStatus == StatusSuccess && !exportsMatchDisk(outs, outList)) {
			invalid()
		}
	case valid && len(outList) > 0:
		invalid() // output_files names a sink the node does not configure
	}
	var summary string
	var err error
	switch {
	case valid && len(ins) > 0 && len(outs) > 0:
		summary, err = ioAuditSummary(ins, inList, outList)
	case valid && len(outs) > 0:
		summary, err = outputAuditSummary(outList)
	case valid && len(ins) > 0:
		summary, err = inputAuditSummary(ins, inList)
	case len(ins) > 0:
		summary, err = inputBaselineSummary(ins)
	default:
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("IO audit summary: %w", err)
	}
	if defect.InputAuditLeaksCell && valid && len(ins) > 0 {
		summary = withFirstRows(summary, ins) // planted defect
	}
	if defect.OutputAuditNamesPath && valid && len(outs) > 0 {
		summary = withOutputPaths(summary, outs) // planted defect
	}
	fields["error_message"] = summary
	return out, nil
}

// withFirstRows is the planted defect input-audit-leaks-cell: the summary also quotes the
// first data line of each input "for the operator", which puts a cell value into the audit
// trail.
func withFirstRows(summary string, ins []nodeInput) string {
	var doc map[string]any
	_ = json.Unmarshal([]byte(summary), &doc)
	var samples []string
	for _, in := range ins {
		data, _ := os.ReadFile(in.Path)
		lines := strings.Split(string(data), "\n")
		if len(lines) > 1 {
			samples = append(samples, strings.TrimSpace(lines[1]))
		}
	}
	doc["first_rows"] = samples
	b, _ := json.Marshal(doc)
	return string(b)
}

// withOutputPaths is the planted defect output-audit-names-path: every output_files entry
// also names the absolute path of the exported file.
func withOutputPaths(summary string, outs []nodeOutput) string {
	var doc map[string]any
	_ = json.Unmarshal([]byte(summary), &doc)
	files, _ := doc["output_files"].([]any)
	for _, f := range files {
		if m, ok := f.(map[string]any); ok {
			for _, o := range outs {
				if m["sink"] == o.Name {
					m["path"] = o.Path
				}
			}
		}
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// failBeforeStart ends an Attempt that never started a child (an input rule refused it):
// Attempt FAILED with the code, no start marker, node FAILED.
func (e *execution) failBeforeStart(ctx context.Context, ns *nodeState, att *attemptRec, cause error) error {
	code := errCode(cause, codeInputPathRejected)
	// The message alone, as the real FlowNet keeps it (the code is the result_code).
	msg := cause.Error()
	var ce *codedError
	if errors.As(cause, &ce) {
		msg = ce.Msg
	}
	var err error
	if att.rev, err = e.st.update(ctx, e.st.auditApp, att.key, vals(map[string]any{
		"status": StatusFailed, "result_code": code, "finished_at": isoMillis(e.c.now()), "error_message": msg,
	}), att.rev); err != nil {
		return fmt.Errorf("finalise Attempt %s: %w", att.id, err)
	}
	att.status, att.code = StatusFailed, code
	if code == codeInputFileMissing || code == codeInputFileMutated || code == codeOutputPathRejected {
		// A FAILED Invocation reports this code instead of NODE_FAILED_OR_BLOCKED (invsets.go).
		e.sets.ioFailureCode = code
	}
	if err := e.putState(ctx, ns, StatusFailed, map[string]any{"status_reason": code, "finished_at": isoMillis(e.c.now())}); err != nil {
		return err
	}
	_, err = e.writeAggregate(ctx) // after the node, as after any settled node
	return err
}

// prepareInputs resolves the node's inputs under KSQL_FLOWNET_IO_DIR (nil when it has none).
func (e *execution) prepareInputs(nd Node) ([]nodeInput, error) {
	if len(nd.Inputs) == 0 {
		return nil, nil
	}
	dir, err := e.c.ioDir()
	if err != nil {
		return nil, err
	}
	return resolveInputs(dir, nd, map[string]string{"business_key": e.run.Str("business_key"), "profile": e.profile})
}

// CSV outputs (product-contract.md §5 outputs; the export wiring is this sandbox's decision
// where §12 item 5 leaves it open, see internal/sandbox/ksqlflow/csvexport.go):
//   - An output template is relative to <KSQL_FLOWNET_IO_DIR>/out with the placeholders
//     {business_key}, {profile}, {run_id}, {node_id}, each one percent-encoded segment; the
//     same rules as inputs, and a target whose real parent leaves the real out root, are
//     OUTPUT_PATH_REJECTED: the Attempt ends FAILED with no subprocess (§1.3.3).
//   - FlowNet creates the target's parent directories and passes --export-csv
//     <sink>=<abs path>; kSQL-Flow writes the file fail-closed (temp file + rename).
//   - A valid result must carry output_files naming configured sinks only, in their sorted
//     order (kSQL-FlowNet 1.0.0's rule); a node without outputs must get none. This sandbox
//     also wants, of a SUCCESS, a receipt per sink whose sha256 and bytes are the file's on
//     disk. Otherwise UNKNOWN / INVALID_EXECUTION_RESULT.
//   - The Attempt's error_message is the KSQL_FLOWNET_OUTPUT_AUDIT v1 summary, or
//     KSQL_FLOWNET_IO_AUDIT for a node with inputs too (iosummary.go): never a path, never a
//     cell value.

type nodeOutput struct {
	Name, Path string
}

// resolveOutputs applies the output path rules and creates the targets' directories.
func resolveOutputs(ioDir string, nd Node, vals map[string]string) ([]nodeOutput, error) {
	root := filepath.Join(ioDir, "out")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, coded(codeOutputPathRejected, "out root cannot be created")
	}
	realRoot, _, err := realPath(root)
	if err != nil {
		return nil, coded(codeOutputPathRejected, "out root: %v", err)
	}
	names := slices.Sorted(maps.Keys(nd.Outputs))
	var out []nodeOutput
	for _, name := range names {
		p, err := expandIOPath(root, nd.Outputs[name], vals)
		if err != nil {
			return nil, coded(codeOutputPathRejected, "output %s: %s", name, strings.TrimPrefix(err.Error(), codeInputPathRejected+": "))
		}
		realDir, _, err := realPath(filepath.Dir(p))
		if err != nil || !within(realRoot, realDir) {
			return nil, coded(codeOutputPathRejected, "output %s resolves outside the IO root", name)
		}
		if err := os.MkdirAll(realDir, 0o755); err != nil {
			return nil, coded(codeOutputPathRejected, "output %s: its directory cannot be created", name)
		}
		out = append(out, nodeOutput{Name: name, Path: filepath.Join(realDir, filepath.Base(p))})
	}
	return out, nil
}

func outputArgs(outs []nodeOutput) []string {
	var a []string
	for _, o := range outs {
		a = append(a, "--export-csv", o.Name+"="+o.Path)
	}
	return a
}

// prepareOutputs resolves the node's outputs (nil when it has none).
func (e *execution) prepareOutputs(nd Node) ([]nodeOutput, error) {
	if len(nd.Outputs) == 0 {
		return nil, nil
	}
	dir, err := e.c.ioDir()
	if err != nil {
		return nil, err
	}
	return resolveOutputs(dir, nd, map[string]string{"business_key": e.run.Str("business_key"), "profile": e.profile,
		"run_id": e.runID, "node_id": nd.ID})
}

// checkInputBaselines is the resume rule (§1.3.1): every selected node with CSV inputs whose
// Attempts recorded a baseline (the latest Attempt whose error_message is an
// INPUT_BASELINE, INPUT_AUDIT or IO_AUDIT summary, iosummary.go) must find its inputs exactly
// as recorded (the same sources, sha256 and bytes): INPUT_FILE_MISSING or INPUT_FILE_MUTATED
// otherwise, before any Invocation is created. A stored summary of a baseline kind that is
// not of its exact shape is INPUT_FILE_MUTATED too.
func (e *execution) checkInputBaselines(ctx context.Context, selected []string) error {
	var withInputs []Node
	for _, id := range selected {
		if ns := e.states[id]; ns != nil && len(ns.node.Inputs) > 0 {
			withInputs = append(withInputs, ns.node)
		}
	}
	if len(withInputs) == 0 || defect.ResumeSkipsInputDigest {
		return nil // planted defect when the switch is on: the digest is not compared
	}
	recs, err := e.st.findExact(ctx, e.st.auditApp, `record_type in ("NODE_ATTEMPT") and run_id in (`+q(e.runID)+`)`, "run_id", e.runID)
	if err != nil {
		return err
	}
	sort.SliceStable(recs, func(i, j int) bool { return atoi(recs[i].Str("attempt_no")) > atoi(recs[j].Str("attempt_no")) })
	for _, nd := range withInputs {
		var stored []baselineEntry
		found := false
		for _, r := range recs {
			if r.Str("node_id") != nd.ID {
				continue
			}
			base, ok, err := parseStoredBaseline(r.Str("error_message"))
			if err != nil {
				return coded(codeInputFileMutated, "stored input baseline for node %s is invalid (%v); create a new Run with a correction business key", nd.ID, err)
			}
			if ok {
				stored, found = base, true
				break
			}
		}
		if !found {
			continue // no Attempt took a baseline yet: the next Attempt takes it
		}
		ins, err := e.prepareInputs(nd)
		if err != nil {
			return err
		}
		if !baselinesEqual(stored, ins) {
			return coded(codeInputFileMutated, "input file changed for node %s; restore the original file or create a new Run with a correction business key", nd.ID)
		}
	}
	return nil
}
