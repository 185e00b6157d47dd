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

	"github.com/ksqlflow/flowtest/sandbox/defect"
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
//   - The input's sha256 is its baseline; kSQL-Flow gets --import-csv name=<abs path> and
//     --expected-import-sha256 name=<baseline>; a SUCCESS result whose input_files receipt
//     is missing or names another sha256 is UNKNOWN / INVALID_EXECUTION_RESULT (§1.3.3).
//   - The Attempt's error_message is the KSQL_FLOWNET_INPUT_AUDIT v1 summary (name, sha256,
//     bytes, rows, encoding, and the result code): never a path, never a cell value.

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
			return nil, coded(codeInputFileMissing, "input %s does not exist", name)
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

// receipts reads input_files from the raw result.
func receipts(raw []byte, field string) map[string]fileReceipt {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	var list []fileReceipt
	if json.Unmarshal(doc[field], &list) != nil {
		return nil
	}
	out := map[string]fileReceipt{}
	for _, r := range list {
		out[r.Name] = r
	}
	return out
}

// inputAudit is the KSQL_FLOWNET_INPUT_AUDIT v1 summary kept in the Attempt's error_message.
func inputAudit(ins []nodeInput, got map[string]fileReceipt, resultCode string) string {
	type entry struct {
		Name     string `json:"name"`
		SHA256   string `json:"baseline_sha256"`
		Bytes    int64  `json:"bytes"`
		Rows     *int64 `json:"rows"`
		Encoding string `json:"encoding,omitempty"`
	}
	doc := struct {
		Kind       string  `json:"kind"`
		Version    int     `json:"version"`
		ResultCode string  `json:"result_code"`
		Inputs     []entry `json:"inputs"`
	}{Kind: "KSQL_FLOWNET_INPUT_AUDIT", Version: 1, ResultCode: resultCode}
	for _, in := range ins {
		e := entry{Name: in.Name, SHA256: in.SHA256, Bytes: in.Bytes}
		if r, ok := got[in.Name]; ok {
			rows := r.Rows
			e.Rows, e.Encoding = &rows, r.Encoding
		}
		doc.Inputs = append(doc.Inputs, e)
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// receiptMismatch says why a SUCCESS result's receipts do not confirm the baselines ("" = ok).
func receiptMismatch(ins []nodeInput, got map[string]fileReceipt) string {
	for _, in := range ins {
		r, ok := got[in.Name]
		switch {
		case !ok:
			return fmt.Sprintf("input %s has no receipt in the result", in.Name)
		case r.SHA256 != in.SHA256:
			return fmt.Sprintf("input %s: receipt sha256 differs from the baseline", in.Name)
		}
	}
	return ""
}

// failBeforeStart ends an Attempt that never started a child (an input rule refused it):
// Attempt FAILED with the code, no start marker, node FAILED.
func (e *execution) failBeforeStart(ctx context.Context, ns *nodeState, att *attemptRec, cause error) error {
	code := errCode(cause, codeInputPathRejected)
	msg := cause.Error()
	var ce *codedError
	if errors.As(cause, &ce) {
		msg = ce.Code + ": " + ce.Msg
	}
	var err error
	if att.rev, err = e.st.update(ctx, e.st.auditApp, att.key, vals(map[string]any{
		"status": StatusFailed, "result_code": code, "finished_at": isoMillis(e.c.now()), "error_message": msg,
	}), att.rev); err != nil {
		return fmt.Errorf("finalise Attempt %s: %w", att.id, err)
	}
	att.status, att.code = StatusFailed, code
	if err := e.putState(ctx, ns, StatusFailed, map[string]any{"status_reason": code, "finished_at": isoMillis(e.c.now())}); err != nil {
		return err
	}
	_, err = e.updateRun(ctx, false)
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

// checkInputReceipts compares the result's input_files with the baselines and puts the
// input audit summary into the Attempt's error_message.
func (e *execution) checkInputReceipts(ins []nodeInput, rr runResult, out Outcome, fields map[string]any) Outcome {
	var got map[string]fileReceipt
	if rr.ResultRaw != nil {
		got = receipts(rr.ResultRaw, "input_files")
	}
	if out.AttemptStatus == StatusSuccess && receiptMismatch(ins, got) != "" {
		out = Outcome{AttemptStatus: StatusUnknown, AttemptCode: CodeInvalidResult, NodeStatus: StatusUnknown, NodeReason: CodeInvalidResult}
		fields["status"], fields["result_code"] = out.AttemptStatus, out.AttemptCode
	}
	fields["error_message"] = inputAudit(ins, got, out.AttemptCode)
	if defect.InputAuditLeaksCell {
		fields["error_message"] = inputAuditWithSample(ins, got, out.AttemptCode) // planted defect
	}
	return out
}

// inputAuditWithSample is the planted defect's summary: it quotes the first data line of
// each input "for the operator", which puts a cell value into the audit trail.
func inputAuditWithSample(ins []nodeInput, got map[string]fileReceipt, code string) string {
	var doc map[string]any
	_ = json.Unmarshal([]byte(inputAudit(ins, got, code)), &doc)
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

// CSV outputs (product-contract.md §5 outputs; the export wiring is this sandbox's decision
// where §12 item 5 leaves it open, see sandbox/ksqlflow/csvexport.go):
//   - An output template is relative to <KSQL_FLOWNET_IO_DIR>/out with the placeholders
//     {business_key}, {profile}, {run_id}, {node_id}, each one percent-encoded segment; the
//     same rules as inputs, and a target whose real parent leaves the real out root, are
//     OUTPUT_PATH_REJECTED: the Attempt ends FAILED with no subprocess (§1.3.3).
//   - FlowNet creates the target's parent directories and passes --export-csv
//     <sink>=<abs path>; kSQL-Flow writes the file fail-closed (temp file + rename).
//   - A SUCCESS result must carry an output_files receipt per sink whose sha256 is the
//     file's on disk, else UNKNOWN / INVALID_EXECUTION_RESULT.
//   - The Attempt's error_message is the KSQL_FLOWNET_OUTPUT_AUDIT v1 summary (sinks with
//     sha256, bytes, rows, encoding, and the result code; inputs of the node too): never a
//     path, never a cell value.

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

// checkOutputReceipts compares the result's output_files with the files on disk and puts
// the output audit summary into the Attempt's error_message.
func (e *execution) checkOutputReceipts(ins []nodeInput, outs []nodeOutput, rr runResult, out Outcome, fields map[string]any) Outcome {
	var got map[string]fileReceipt
	if rr.ResultRaw != nil {
		got = receipts(rr.ResultRaw, "output_files")
	}
	if out.AttemptStatus == StatusSuccess {
		for _, o := range outs {
			r, ok := got[o.Name]
			data, err := os.ReadFile(o.Path)
			sum := sha256.Sum256(data)
			if !ok || err != nil || hex.EncodeToString(sum[:]) != r.SHA256 || int64(len(data)) != r.Bytes {
				out = Outcome{AttemptStatus: StatusUnknown, AttemptCode: CodeInvalidResult, NodeStatus: StatusUnknown, NodeReason: CodeInvalidResult}
				fields["status"], fields["result_code"] = out.AttemptStatus, out.AttemptCode
				break
			}
		}
	}
	type entry struct {
		Name     string `json:"name"`
		SHA256   string `json:"sha256"`
		Bytes    int64  `json:"bytes"`
		Rows     int64  `json:"rows"`
		Encoding string `json:"encoding"`
		Path     string `json:"path,omitempty"`
	}
	doc := struct {
		Kind       string          `json:"kind"`
		Version    int             `json:"version"`
		ResultCode string          `json:"result_code"`
		Outputs    []entry         `json:"outputs"`
		Inputs     json.RawMessage `json:"inputs,omitempty"`
	}{Kind: "KSQL_FLOWNET_OUTPUT_AUDIT", Version: 1, ResultCode: out.AttemptCode, Outputs: []entry{}}
	for _, o := range outs {
		if r, ok := got[o.Name]; ok {
			en := entry{Name: o.Name, SHA256: r.SHA256, Bytes: r.Bytes, Rows: r.Rows, Encoding: r.Encoding}
			if defect.OutputAuditNamesPath {
				en.Path = o.Path // planted defect: the receipt names the absolute file path
			}
			doc.Outputs = append(doc.Outputs, en)
		}
	}
	if len(ins) > 0 {
		var in struct {
			Inputs json.RawMessage `json:"inputs"`
		}
		_ = json.Unmarshal([]byte(fields["error_message"].(string)), &in)
		doc.Inputs = in.Inputs
	}
	b, _ := json.Marshal(doc)
	fields["error_message"] = string(b)
	return out
}

// checkInputBaselines is the resume rule (§1.3.1): every selected node with CSV inputs that
// already recorded a baseline (the KSQL_FLOWNET_INPUT_AUDIT summary of its first Attempt
// that has one) must find its input unchanged: INPUT_FILE_MISSING or INPUT_FILE_MUTATED
// otherwise, before any Invocation is created.
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
	sort.Slice(recs, func(i, j int) bool { return atoi(recs[i].Str("attempt_no")) < atoi(recs[j].Str("attempt_no")) })
	for _, nd := range withInputs {
		baseline := map[string]string{}
		for _, r := range recs {
			if r.Str("node_id") != nd.ID {
				continue
			}
			var sum struct {
				Kind   string `json:"kind"`
				Inputs []struct {
					Name   string `json:"name"`
					SHA256 string `json:"baseline_sha256"`
				} `json:"inputs"`
			}
			if json.Unmarshal([]byte(r.Str("error_message")), &sum) != nil || sum.Kind != "KSQL_FLOWNET_INPUT_AUDIT" {
				continue
			}
			for _, in := range sum.Inputs {
				if _, seen := baseline[in.Name]; !seen {
					baseline[in.Name] = in.SHA256
				}
			}
		}
		if len(baseline) == 0 {
			continue // no Attempt took a baseline yet: the next Attempt takes it
		}
		ins, err := e.prepareInputs(nd)
		if err != nil {
			return err
		}
		for _, in := range ins {
			if b, ok := baseline[in.Name]; ok && b != in.SHA256 {
				return coded(codeInputFileMutated, "node %s: input %s changed since its baseline was recorded", nd.ID, in.Name)
			}
		}
	}
	return nil
}
