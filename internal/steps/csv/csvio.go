package csv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/harness/scenario"
	"github.com/ksqlflow/flowtest/internal/harness/scope"
	"github.com/ksqlflow/flowtest/internal/harness/stepdef"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/transform"
	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/steps/kit"
)

// csvIODomain: the CSV series' per-scope IO root and its CSV input (scenarios.md §2.8): the
// root <base>/<scope>_XXXX/{in,out} (base: the target's IO dir, KSQL_FLOWNET_IO_DIR on a
// live tenant; else the scenario work dir) given to FlowNet as KSQL_FLOWNET_IO_DIR, CSV
// fixtures rendered with the scope's row prefix, marker key and encoding, and the input
// written where the rendered network's input template says.
//
// Decisions:
//   - The input path is computed from the rendered network's nodes[].inputs.source the way
//     FlowNet must compute it: <IO root>/in/<template>, each placeholder value percent-
//     encoded as one path segment (url.PathEscape). If FlowNet resolved it differently the
//     run would end INPUT_FILE_MISSING, which the scenario sees.
//   - Rows are KSQL_FLOW_TEST_<sha256(scope)[0:12]>_<00001…> (kintoneguard.CSVRowPrefix, within
//     the 64-character unique limit) with the value CSV1_PRIVATE_CELL_DO_NOT_AUDIT_<n>; the
//     file is UTF-8 with CRLF line ends and a header test_key,test_value.
type csvIODomain struct{}

func (d csvIODomain) register(reg stepdef.Registry) {
	reg.Step(kit.ExprCSVFixture, d.theCSVFixture)
	reg.Step(kit.ExprCSVFixtureAs, d.theCSVFixtureAs)
	reg.Step(kit.ExprCSVFixtureInSubScope, d.theCSVFixtureInASubScope)
	reg.Step(kit.ExprCSVFixtureInSubScopeAs, d.theCSVFixtureInASubScopeAs)
	reg.Step(`^the scope's IO root holds no CSV input$`, d.ioRootWithoutInput)
	reg.Step(`^the scope's CSV input holds (\d+) rows in UTF-8, the first value starting with "([^"]+)"$`, d.inputWithFirstValue)
	reg.Step(`^the scope's CSV input holds (\d+) rows in UTF-8$`, d.inputHoldsRows)
	reg.Step(`^the scope's CSV input holds (\d+) rows in Shift_JIS$`, d.inputHoldsSJISRows)
	reg.Step(`^the scope's CSV input holds (\d+) rows of Japanese text in UTF-8$`, d.inputHoldsJapaneseRows)
	reg.Step(`^the scope's CSV input holds (\d+) rows in UTF-8 behind a directory link that leaves the IO root$`, d.inputBehindLink)
	reg.Step(`^the CSV input is rewritten with one value changed$`, d.rewriteOneValue)
}

// csvIOState is the scenario's IO roots (by scope id) and the CSV input last written.
type csvIOState struct {
	roots  map[string]string // scope id -> IO root (KSQL_FLOWNET_IO_DIR given to FlowNet)
	input  string            // absolute path of the CSV input (as the harness wrote it)
	sha256 string
	bytes  int
	rows   [][2]string // key, value
	// before is the sha256 and size of the CSV input before its last rewrite ("" when it
	// was never rewritten).
	before struct {
		sha256 string
		bytes  int
	}
}

var csvIOKey = scenario.NewKey[csvIOState]("csv-io")

// root is the scope's IO root, "" before the scenario made it.
func (s *csvIOState) root(scopeID string) string { return s.roots[scopeID] }

// written is the CSV input's rows (key, value) in input order; nil before one was written.
func (s *csvIOState) written() [][2]string { return s.rows }

// inputFile is the CSV input's path, sha256 and size ("" before one was written).
func (s *csvIOState) inputFile() (path, sha256 string, size int) { return s.input, s.sha256, s.bytes }

// rewrittenFrom is the CSV input's sha256 and size before its last rewrite ("" when it was
// never rewritten).
func (s *csvIOState) rewrittenFrom() (sha256 string, size int) {
	return s.before.sha256, s.before.bytes
}

// adopt makes data, written at path, the CSV input (an export copied back as an input).
func (s *csvIOState) adopt(path string, data []byte) {
	s.input, s.sha256, s.bytes = path, digest(data), len(data)
}

// csvIOEnv is KSQL_FLOWNET_IO_DIR for the scope, once the scenario made its IO root.
func csvIOEnv(sc *kit.Scene, fx *kit.FixtureState) []string {
	if root := csvIOKey.Of(sc.St).roots[fx.Scope().ID()]; root != "" {
		return []string{"KSQL_FLOWNET_IO_DIR=" + root}
	}
	return nil
}

// ioRoot makes (once per scope) <base>/<scope>_XXXX/{in,out}; base is the target's IO dir
// (a live tenant's KSQL_FLOWNET_IO_DIR, which its preflight requires), else the scenario
// work dir.
func (s *csvIOState) ioRoot(sc *kit.Scene, fx *kit.FixtureState) (string, error) {
	if s.roots == nil {
		s.roots = map[string]string{}
	}
	id := fx.Scope().ID()
	if r := s.roots[id]; r != "" {
		return r, nil
	}
	base := sc.Suite.Target.IODir
	if base == "" {
		base = filepath.Join(sc.St.WorkDir, "io")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	root, err := os.MkdirTemp(base, id+"_")
	if err != nil {
		return "", fmt.Errorf("CSV IO root: %w", err)
	}
	for _, d := range []string{"in", "out"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return "", err
		}
	}
	s.roots[id] = root
	sc.St.Note("CSV IO root of "+id, filepath.Base(root))
	scopeID := id
	sc.St.Defer("delete the CSV fixture rows of "+scopeID, func(ctx context.Context) error {
		return deleteCSVRows(ctx, sc, scopeID)
	})
	return root, nil
}

// csvNode is a node of the rendered network as far as its CSV files go.
type csvNode struct {
	ID      string            `yaml:"id"`
	Inputs  map[string]string `yaml:"inputs"`
	Outputs map[string]string `yaml:"outputs"`
}

// renderedCSVNodes reads the current network's rendered file (the working copy).
func renderedCSVNodes(fx *kit.FixtureState) (*scope.Rendered, []csvNode, error) {
	n, err := fx.Rendered()
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(n.Path)
	if err != nil {
		return nil, nil, err
	}
	var doc struct {
		Nodes []csvNode `yaml:"nodes"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("rendered network %s: %w", filepath.Base(n.Path), err)
	}
	return n, doc.Nodes, nil
}

// inputTemplate reads nodes[].inputs.source of the rendered network.
func inputTemplate(fx *kit.FixtureState) (string, error) {
	n, nodes, err := renderedCSVNodes(fx)
	if err != nil {
		return "", err
	}
	for _, nd := range nodes {
		if t := nd.Inputs["source"]; t != "" {
			return t, nil
		}
	}
	return "", fmt.Errorf("network %s has no node with an input \"source\"", n.FixtureNetworkID)
}

var placeholder = regexp.MustCompile(`\{([a-z_]+)\}`)

// inputPlace is the scope's IO root (made on first use) and the CSV input's path under its
// in/ directory.
func (s *csvIOState) inputPlace(sc *kit.Scene, fx *kit.FixtureState) (root, rel string, err error) {
	if root, err = s.ioRoot(sc, fx); err != nil {
		return "", "", err
	}
	rel, err = inputRelPath(sc, fx)
	return root, rel, err
}

// inputRelPath expands the input template for the scope's business key and the profile.
func inputRelPath(sc *kit.Scene, fx *kit.FixtureState) (string, error) {
	tmpl, err := inputTemplate(fx)
	if err != nil {
		return "", err
	}
	vals := map[string]string{"business_key": fx.Scope().BusinessKey(), "profile": sc.Suite.Target.Profile}
	var bad string
	rel := placeholder.ReplaceAllStringFunc(tmpl, func(m string) string {
		v, ok := vals[m[1:len(m)-1]]
		if !ok {
			bad = m
		}
		return url.PathEscape(v)
	})
	if bad != "" {
		return "", fmt.Errorf("input template %q: placeholder %s", tmpl, bad)
	}
	return filepath.FromSlash(rel), nil
}

// writeInput writes n UTF-8 rows (CRLF) at path and remembers them.
func (s *csvIOState) writeInput(sc *kit.Scene, fx *kit.FixtureState, path string, n int) error {
	return s.writeRows(sc, fx, path, n, "utf8", "")
}

// japaneseCells is the text the Japanese CSV rows carry after their ASCII marker:
// kanji, full-width and half-width kana, and the characters where CP932 and other Japanese
// encodings part: ～ － ∥ ￠ ￡ ￢ (0x8160 0x817C 0x8161 0x8191 0x8192 0x81CA: the Unicode
// CP932 maps them to, not JIS X 0208's 〜 − ‖ ¢ £ ¬) and the NEC row-13 extensions ① ㈱
// (0x8740 0x878A). ￢ and ㈱ have a second, IBM extension code in CP932 (0xFA54 0xFA58) that
// decodes to the same text, so only a byte comparison tells them apart. The NEC-selected IBM
// extensions (0xED/0xEE rows, e.g. 髙) are left out: golang.org/x/text encodes them there,
// Windows' CP932 (and iconv's) in the IBM rows 0xFA-0xFC, and the contract does not say which.
var japaneseCells = []string{
	"漢字カタカナｶﾀｶﾅ～－∥￠￡￢①㈱",
	"株式会社テスト㈱ﾃｽﾄ①～￢",
	"全角ひらがなと半角ｶﾅ－∥￠￡",
}

// rowsCSV is the CSV input's text: the header and s.rows, CRLF, in input order (what the
// harness writes, and what an export of the same rows must be).
func (s *csvIOState) rowsCSV() string {
	var b strings.Builder
	b.WriteString("test_key,test_value\r\n")
	for _, r := range s.rows {
		b.WriteString(r[0] + "," + r[1] + "\r\n")
	}
	return b.String()
}

// rowsCSVInOrderOf is rowsCSV with its rows in the order the export got lists them, when got
// holds the header and exactly the same rows (as a multiset); otherwise rowsCSV itself. The
// fixture's export SQL has no ORDER BY (the sandbox's dialect refuses one) and kintone reads
// without one in `$id desc`, so the row order is the engine's: the content is compared as a
// set of rows, the bytes of each row exactly (reordered: the order was taken from got).
func (s *csvIOState) rowsCSVInOrderOf(got string) (want string, reordered bool) {
	want = s.rowsCSV()
	header, rest, ok := strings.Cut(want, "\r\n")
	gotHeader, gotRest, gotOK := strings.Cut(got, "\r\n")
	if !ok || !gotOK || header != gotHeader || !strings.HasSuffix(gotRest, "\r\n") {
		return want, false
	}
	count := map[string]int{}
	for _, line := range strings.SplitAfter(rest, "\r\n") {
		count[line]++
	}
	for _, line := range strings.SplitAfter(gotRest, "\r\n") {
		if count[line] == 0 {
			return want, false
		}
		count[line]--
	}
	for _, n := range count {
		if n != 0 {
			return want, false // a row of the input is missing from the export
		}
	}
	return got, got != want
}

// writeRows writes n rows (CRLF) in the encoding; a non-empty lang "ja" appends Japanese text
// to each value (japaneseCells; UTF-8 only, the Shift_JIS bytes are the exporter's to write).
func (s *csvIOState) writeRows(sc *kit.Scene, fx *kit.FixtureState, path string, n int, encoding, lang string) error {
	prefix := kintoneguard.CSVRowPrefix(fx.Scope().ID())
	s.rows = nil
	for i := 1; i <= n; i++ {
		k, v := fmt.Sprintf("%s%05d", prefix, i), fmt.Sprintf("CSV1_PRIVATE_CELL_DO_NOT_AUDIT_%d", i)
		if lang == "ja" {
			v += "_" + japaneseCells[(i-1)%len(japaneseCells)]
		}
		s.rows = append(s.rows, [2]string{k, v})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data := []byte(s.rowsCSV())
	if encoding == "sjis" {
		var err error
		if data, _, err = transform.Bytes(japanese.ShiftJIS.NewEncoder(), data); err != nil {
			return fmt.Errorf("encode the CSV input in Shift_JIS: %w", err)
		}
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	s.adopt(path, data)
	sc.St.Note("CSV input", fmt.Sprintf("%d rows, %s, %d bytes, sha256 %s", n, encoding, len(data), s.sha256))
	return nil
}

func (csvIODomain) ioRootWithoutInput(ctx context.Context) error {
	_, err := csvIOKey.Of(kit.SceneOf(ctx).St).ioRoot(kit.SceneOf(ctx), kit.FixturesOf(ctx))
	return err
}

func (csvIODomain) inputHoldsRows(ctx context.Context, n int) error {
	return inputRows(ctx, n, "utf8", "")
}

func (csvIODomain) inputHoldsSJISRows(ctx context.Context, n int) error {
	return inputRows(ctx, n, "sjis", "")
}

// inputHoldsJapaneseRows writes n UTF-8 rows whose values carry Japanese text (japaneseCells).
func (csvIODomain) inputHoldsJapaneseRows(ctx context.Context, n int) error {
	return inputRows(ctx, n, "utf8", "ja")
}

// inputRows writes the scope's CSV input of n rows in encoding; lang "ja" adds Japanese text.
func inputRows(ctx context.Context, n int, encoding, lang string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvIOKey.Of(sc.St)
	root, rel, err := s.inputPlace(sc, fx)
	if err != nil {
		return err
	}
	return s.writeRows(sc, fx, filepath.Join(root, "in", rel), n, encoding, lang)
}

// inputBehindLink writes the input outside the IO root and replaces the first directory of
// the input path (in/csv1) by a directory symlink (a junction would do on Windows) to it.
func (csvIODomain) inputBehindLink(ctx context.Context, n int) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	s := csvIOKey.Of(sc.St)
	root, rel, err := s.inputPlace(sc, fx)
	if err != nil {
		return err
	}
	parts := strings.SplitN(filepath.ToSlash(rel), "/", 2)
	if len(parts) != 2 {
		return fmt.Errorf("input path %q has no directory to replace by a link", rel)
	}
	outside, err := os.MkdirTemp(filepath.Dir(root), fx.Scope().ID()+"_outside_")
	if err != nil {
		return err
	}
	if err := s.writeInput(sc, fx, filepath.Join(outside, parts[0], filepath.FromSlash(parts[1])), n); err != nil {
		return err
	}
	link := filepath.Join(root, "in", parts[0])
	if err := os.Symlink(filepath.Join(outside, parts[0]), link); err != nil {
		return fmt.Errorf("directory link %s -> outside the IO root: %w (link creation unsupported here: the rule is covered by sandbox/flownet's io tests)", filepath.Join("in", parts[0]), err)
	}
	sc.St.Note("directory link", filepath.Join("in", parts[0])+" -> a directory outside the IO root")
	return nil
}

// csvReplacements are the SQL placeholder tokens of the CSV fixtures for the scope.
func csvReplacements(fx *kit.FixtureState, encoding string) map[string]string {
	id := fx.Scope().ID()
	return map[string]string{"__CSV1_ENCODING__": encoding, "__CSV_ROW_PREFIX__": kintoneguard.CSVRowPrefix(id),
		"__CSV_MARKER_KEY__": kintoneguard.CSVMarkerKey(id)}
}

func (csvIODomain) theCSVFixture(ctx context.Context, name, encoding string) error {
	fx := kit.FixturesOf(ctx)
	return fx.RenderReplacing(kit.SceneOf(ctx), name, "", csvReplacements(fx, encoding))
}

func (csvIODomain) theCSVFixtureAs(ctx context.Context, name, encoding, label string) error {
	fx := kit.FixturesOf(ctx)
	return fx.RenderReplacing(kit.SceneOf(ctx), name, label, csvReplacements(fx, encoding))
}

func (csvIODomain) theCSVFixtureInASubScope(ctx context.Context, name, encoding, label string) error {
	return (csvIODomain{}).theCSVFixtureInASubScopeAs(ctx, name, encoding, label, "")
}

func (csvIODomain) theCSVFixtureInASubScopeAs(ctx context.Context, name, encoding, label, network string) error {
	sc, fx := kit.SceneOf(ctx), kit.FixturesOf(ctx)
	if err := fx.EnterSubScope(sc, label); err != nil {
		return err
	}
	return fx.RenderReplacing(sc, name, network, csvReplacements(fx, encoding))
}

func (csvIODomain) inputWithFirstValue(ctx context.Context, n int, first string) error {
	if err := (csvIODomain{}).inputHoldsRows(ctx, n); err != nil {
		return err
	}
	sc := kit.SceneOf(ctx)
	s := csvIOKey.Of(sc.St)
	s.rows[0][1] = first + s.rows[0][1]
	data := []byte(s.rowsCSV())
	if err := os.WriteFile(s.input, data, 0o600); err != nil {
		return err
	}
	s.sha256, s.bytes = digest(data), len(data)
	return nil
}

// rewriteOneValue changes the last row's value in place: same size class, another sha256.
func (csvIODomain) rewriteOneValue(ctx context.Context) error {
	sc := kit.SceneOf(ctx)
	s := csvIOKey.Of(sc.St)
	if s.input == "" || len(s.rows) == 0 {
		return fmt.Errorf("no CSV input was written in this scenario")
	}
	s.rows[len(s.rows)-1][1] += "_CHANGED"
	data := []byte(s.rowsCSV())
	if err := os.WriteFile(s.input, data, 0o600); err != nil {
		return err
	}
	before := s.sha256
	s.before.sha256, s.before.bytes = s.sha256, s.bytes
	s.sha256, s.bytes = digest(data), len(data)
	return sc.St.On("file.input.sha256").Assert("sha256 of the rewritten CSV input", "differs from "+before, s.sha256, s.sha256 != before)
}

// digest is the hex sha256 of b (how the receipts name a file's content).
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
