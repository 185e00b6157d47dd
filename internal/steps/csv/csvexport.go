package csv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"github.com/ksqlflow/flowtest/internal/safety"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/transform"
	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// csvExportDomain: the CSV exports of CSV2 (scenarios.md §2.9): an output sink added to the
// working copy, where a sink lands (<IO root>/out/<template>, each placeholder one
// percent-encoded segment), an old file left alone by a failed export, no temporary file,
// the artefact decoded strictly and compared with the CSV input byte for byte (and with
// iconv's CP932), and an export copied back as the next network's input.
type csvExportDomain struct{}

func (d csvExportDomain) register(reg stepdef.Registry) {
	reg.Step(`^the working copy of the network gives node "([^"]+)" the output "([^"]+)" at "([^"]+)"$`, d.addOutput)
	reg.Step(`^an old "([^"]+)" file is in place$`, d.oldFileInPlace)
	reg.Step(`^the "([^"]+)" file is byte-identical to the old one$`, d.fileUnchanged)
	reg.Step(`^there is no "([^"]+)" file$`, d.noFile)
	reg.Step(`^no temporary file is left beside the "([^"]+)" file$`, d.noTempFile)
	reg.Step(`^the exported "([^"]+)" file decodes strictly as "(utf8|sjis)" and is the CSV input's rows as CRLF CSV$`, d.exportedFileIs)
	reg.Step(`^the exported "([^"]+)" file is, byte for byte, the CSV input's rows as CRLF CSV encoded by iconv's CP932$`, d.exportedBytesAreIconvCP932)
	reg.Step(`^the exported "([^"]+)" file is copied unchanged to the CSV input of the current network$`, d.copyExportToInput)
}

// csvExportState is where the sinks land and what was there before the run.
type csvExportState struct {
	lastExport map[string]string // sink -> the output file located last (any network)
	// by sinkKey: the output file's path, the bytes of an old file
	outputs map[string]string
	old     map[string][]byte
}

var csvExportKey = scenario.NewKey[csvExportState]("csv-export")

// exported is the output file of sink located last, in any network ("" before).
func (s *csvExportState) exported(sink string) string { return s.lastExport[sink] }

// sinkKey names a sink of the current network (outputs of two networks may share a file).
func sinkKey(fx *kit.FixtureState, sink string) string {
	if fx.Current() == nil {
		return fx.Scope().ID() + "/" + sink
	}
	return fx.Current().NetworkID + "/" + sink
}

// addOutput gives a node of the rendered network (the working copy) one more output sink,
// checked by the preflight's fixture rules like every edited working copy.
func (csvExportDomain) addOutput(ctx context.Context, node, sink, tmpl string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	n, err := fx.Rendered()
	if err != nil {
		return err
	}
	rn, err := fx.Node(node)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(n.Path)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	var outputs *yaml.Node
	nodes := yamlValue(doc.Content[0], "nodes")
	for _, nd := range nodes.Content {
		if id := yamlValue(nd, "id"); id != nil && id.Value == rn.ID {
			outputs = yamlValue(nd, "outputs")
		}
	}
	if outputs == nil {
		return fmt.Errorf("node %s of the working copy has no outputs to extend", node)
	}
	outputs.Content = append(outputs.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: sink}, &yaml.Node{Kind: yaml.ScalarNode, Value: tmpl, Style: yaml.DoubleQuotedStyle})
	edited, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	if sc.Suite.CheckFixture == nil {
		return fmt.Errorf("no fixture check was wired: a working copy cannot be edited after preflight")
	}
	if err := sc.Suite.CheckFixture(safety.Fixture{Scenario: sc.St.ID, Kind: safety.FixtureNetwork, Name: fx.FileName(), Path: n.Path, Content: edited}); err != nil {
		return err
	}
	if err := os.WriteFile(n.Path, edited, 0o644); err != nil {
		return err
	}
	sc.St.Note("working copy of the network edited", fmt.Sprintf("node %s: output %s at %s", node, sink, tmpl))
	return nil
}

func yamlValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// outputPath is where the current network's sink lands: <IO root>/out/<template>, each
// placeholder one percent-encoded segment (remembered per scope and sink).
func (s *csvExportState) outputPath(sc *kit.Scene, fx *kit.FixtureState, sink string) (string, error) {
	if s.outputs == nil {
		s.outputs, s.old = map[string]string{}, map[string][]byte{}
	}
	if p := s.outputs[sinkKey(fx, sink)]; p != "" {
		return p, nil
	}
	root, err := csvIOKey.Of(sc.St).ioRoot(sc, fx)
	if err != nil {
		return "", err
	}
	n, nodes, err := renderedCSVNodes(fx)
	if err != nil {
		return "", err
	}
	for _, nd := range nodes {
		tmpl := nd.Outputs[sink]
		if tmpl == "" {
			continue
		}
		vals := map[string]string{"business_key": fx.Scope().BusinessKey(), "profile": sc.Suite.Target.Profile, "node_id": nd.ID}
		rel := placeholder.ReplaceAllStringFunc(tmpl, func(m string) string { return url.PathEscape(vals[m[1:len(m)-1]]) })
		p := filepath.Join(root, "out", filepath.FromSlash(rel))
		s.outputs[sinkKey(fx, sink)] = p
		if s.lastExport == nil {
			s.lastExport = map[string]string{}
		}
		s.lastExport[sink] = p
		return p, nil
	}
	return "", fmt.Errorf("network %s has no output sink %q", n.FixtureNetworkID, sink)
}

func (csvExportDomain) oldFileInPlace(ctx context.Context, sink string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvExportKey.Of(sc.St)
	p, err := s.outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	old := []byte("test_key,test_value\r\nOLD_FILE_BEFORE_THE_RUN,old\r\n")
	s.old[sinkKey(fx, sink)] = old
	return os.WriteFile(p, old, 0o644)
}

func (csvExportDomain) fileUnchanged(ctx context.Context, sink string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvExportKey.Of(sc.St)
	p, err := s.outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	want, ok := s.old[sinkKey(fx, sink)]
	if !ok {
		return fmt.Errorf("no old %q file was put in place", sink)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		return sc.St.On("file.export.sha256").Equal("sha256 of the "+sink+" file (the old one)", digest(want), "unreadable: "+err.Error())
	}
	return sc.St.On("file.export.sha256").Equal("sha256 of the "+sink+" file (the old one)", digest(want), digest(got))
}

func (csvExportDomain) noFile(ctx context.Context, sink string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	p, err := csvExportKey.Of(sc.St).outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	seen := "absent"
	if st, err := os.Lstat(p); err == nil {
		seen = fmt.Sprintf("present, %d bytes", st.Size())
	}
	return sc.St.On("file.export.presence").Equal("the "+sink+" file", "absent", seen)
}

func (csvExportDomain) noTempFile(ctx context.Context, sink string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	p, err := csvExportKey.Of(sc.St).outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Dir(p))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var tmp []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") || strings.Contains(e.Name(), ".tmp.") || strings.HasPrefix(e.Name(), ".") {
			tmp = append(tmp, e.Name())
		}
	}
	return sc.St.On("file.export.temporary").Equal("temporary files beside the "+sink+" file", "(none)", kit.OrNone(strings.Join(tmp, ",")))
}

// readExport reads the sink's exported file; one that cannot be read fails as an assertion.
func (s *csvExportState) readExport(sc *kit.Scene, fx *kit.FixtureState, sink string) ([]byte, error) {
	p, err := s.outputPath(sc, fx, sink)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, sc.St.On("file.export.bytes").Equal("the exported "+sink+" file", "readable", err.Error())
	}
	return data, nil
}

// exportedFileIs decodes the artefact strictly and compares it with the expected CSV: the
// header and the CSV input's rows, CRLF, each row exact, in any order (rowsCSVInOrderOf).
func (csvExportDomain) exportedFileIs(ctx context.Context, sink, encoding string) error {
	sc := kit.SceneOf(ctx)
	s := csvExportKey.Of(sc.St)
	data, err := s.readExport(sc, kit.FixturesOf(ctx), sink)
	if err != nil {
		return err
	}
	text, derr := strictDecode(data, encoding)
	if err := sc.St.On("file.export.encoding").Assert("the exported "+sink+" file decodes strictly as "+encoding, "decodes", fmt.Sprint(derr), derr == nil); err != nil {
		return err
	}
	want, reordered := csvIOKey.Of(sc.St).rowsCSVInOrderOf(text)
	if reordered {
		sc.St.Note("the exported "+sink+" file", "the input's rows in another order (the export SQL has no ORDER BY); compared as a set of rows")
	}
	seen := "identical"
	if text != want {
		seen = fmt.Sprintf("differs: %d bytes decoded, %d expected; first line %q", len(text), len(want), kit.FirstLineOrNone(text))
	}
	return sc.St.On("file.export.bytes").Equal("the exported "+sink+" file against the expected CRLF CSV", "identical", seen)
}

// exportedBytesAreIconvCP932 compares the exported file's bytes with the expected CSV (its rows
// in the export's order) encoded by the distribution's iconv (-t CP932) as a child process: an encoder that is not the one
// the sandbox uses (golang.org/x/text), so an exporter and this check cannot share a mistake.
// Strict decoding alone cannot see an export in another Japanese encoding whose codes decode
// to the same text (CP932 has two codes for ￢ and ㈱). Without iconv the scenario is blocked.
func (csvExportDomain) exportedBytesAreIconvCP932(ctx context.Context, sink string) error {
	sc := kit.SceneOf(ctx)
	s := csvExportKey.Of(sc.St)
	data, err := s.readExport(sc, kit.FixturesOf(ctx), sink)
	if err != nil {
		return err
	}
	// The rows in the export's own order (see rowsCSVInOrderOf), read from its strict decode:
	// an undecodable export is compared with the input order and fails on its bytes.
	expected := csvIOKey.Of(sc.St).rowsCSV()
	if text, derr := strictDecode(data, "sjis"); derr == nil {
		expected, _ = csvIOKey.Of(sc.St).rowsCSVInOrderOf(text)
	}
	want, err := iconvCP932(ctx, expected)
	if err != nil {
		return err
	}
	seen := "identical"
	if !bytes.Equal(data, want) {
		seen = firstByteDifference(data, want)
	}
	return sc.St.On("file.export.bytes").Equal("the exported "+sink+" file's bytes against iconv's CP932", "identical", seen)
}

// iconvCP932 encodes text with `iconv -f UTF-8 -t CP932` (glibc's CP932 is Microsoft's table).
func iconvCP932(ctx context.Context, text string) ([]byte, error) {
	bin, err := exec.LookPath("iconv")
	if err != nil {
		return nil, scenario.Blocked("iconv unavailable: not on PATH (the CP932 byte check needs the distribution's iconv, Debian's libc-bin; .ci/run installs it)")
	}
	cmd := exec.CommandContext(ctx, bin, "-f", "UTF-8", "-t", "CP932")
	cmd.Stdin = strings.NewReader(text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("iconv -f UTF-8 -t CP932 of the expected CSV: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// firstByteDifference names the first offset where got and want part, with a few bytes each.
func firstByteDifference(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	win := func(b []byte) string {
		return fmt.Sprintf("% X", b[i:min(len(b), i+6)])
	}
	return fmt.Sprintf("differs at byte %d of %d (expected %d): got %s, iconv %s", i, len(got), len(want), win(got), win(want))
}

// copyExportToInput copies the artefact's bytes as the current network's CSV input.
func (csvExportDomain) copyExportToInput(ctx context.Context, sink string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvExportKey.Of(sc.St)
	src := s.lastExport[sink]
	if src == "" {
		return fmt.Errorf("no exported %s file was located yet", sink)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	root, rel, err := csvIOKey.Of(sc.St).inputPlace(sc, fx)
	if err != nil {
		return err
	}
	dst := filepath.Join(root, "in", rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return err
	}
	csvIOKey.Of(sc.St).adopt(dst, data)
	sc.St.Note("CSV input copied from the export", fmt.Sprintf("%d bytes, sha256 %s", len(data), digest(data)))
	return nil
}

// strictDecode decodes a file strictly (invalid bytes fail).
func strictDecode(data []byte, encoding string) (string, error) {
	switch encoding {
	case "utf8":
		if !utf8.Valid(data) {
			return "", fmt.Errorf("invalid UTF-8")
		}
		return string(data), nil
	case "sjis":
		out, _, err := transform.Bytes(japanese.ShiftJIS.NewDecoder(), data)
		if err != nil {
			return "", err
		}
		if strings.ContainsRune(string(out), utf8.RuneError) {
			return "", fmt.Errorf("invalid Shift_JIS")
		}
		return string(out), nil
	}
	return "", fmt.Errorf("unknown encoding %q", encoding)
}
