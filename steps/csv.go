package steps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shirou/gopsutil/v3/process"

	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/transform"
	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/harness/kintone"
	"github.com/ksqlflow/flowtest/harness/proc"
	"github.com/ksqlflow/flowtest/harness/scenario"
	"github.com/ksqlflow/flowtest/harness/stepdef"
	"github.com/ksqlflow/flowtest/harness/target"
	"github.com/ksqlflow/flowtest/kintoneapi"
	"github.com/ksqlflow/flowtest/safety"
)

// csvDomain: the CSV series (scenarios.md §2.8): a per-scope IO root under
// KSQL_FLOWNET_IO_DIR (the sandbox: the scenario work dir) with in/ and out/, the CSV input
// written where the rendered network's input template says, the CSV fixture app read back
// exactly, the input audit summary of an Attempt, and the no-leak scan of the scope's
// audit trail.
//
// Decisions:
//   - The input path is computed from the rendered network's nodes[].inputs.source the way
//     FlowNet must compute it: <IO root>/in/<template>, each placeholder value percent-
//     encoded as one path segment (url.PathEscape). If FlowNet resolved it differently the
//     run would end INPUT_FILE_MISSING, which the scenario sees.
//   - Rows are KSQL_FLOW_TEST_<sha256(scope)[0:12]>_<00001…> (kintone.CSVRowPrefix, within
//     the 64-character unique limit) with the value CSV1_PRIVATE_CELL_DO_NOT_AUDIT_<n>; the
//     file is UTF-8 with CRLF line ends and a header test_key,test_value.
//   - The CSV fixture app is read with its view-only token (sandbox) — a live tenant must
//     give KSQL_CSV1_TARGET a read token too, else the read step says so; the scope's rows
//     are deleted through the write guard after the scenario.
type csvDomain struct{}

func (d csvDomain) register(reg stepdef.Registry) {
	reg.Step(`^the network fixture "([^"]+)" for the scope's CSV rows in "(UTF8|SJIS)"$`, d.theCSVFixture)
	reg.Step(`^the network fixture "([^"]+)" for the scope's CSV rows in "(UTF8|SJIS)" as network "([^"]+)"$`, d.theCSVFixtureAs)
	reg.Step(`^the network fixture "([^"]+)" for the scope's CSV rows in "(UTF8|SJIS)" in a fresh sub-scope "([^"]+)"$`, d.theCSVFixtureInASubScope)
	reg.Step(`^the network fixture "([^"]+)" for the scope's CSV rows in "(UTF8|SJIS)" in a fresh sub-scope "([^"]+)" as network "([^"]+)"$`, d.theCSVFixtureInASubScopeAs)
	reg.Step(`^the scope's finalize marker row is in the CSV fixture app$`, d.markerRow)
	reg.Step(`^the scope's IO root holds no CSV input$`, d.ioRootWithoutInput)
	reg.Step(`^the scope's CSV input holds (\d+) rows in UTF-8, the first value starting with "([^"]+)"$`, d.inputWithFirstValue)
	reg.Step(`^the working copy of the network gives node "([^"]+)" the output "([^"]+)" at "([^"]+)"$`, d.addOutput)
	reg.Step(`^an old "([^"]+)" file is in place$`, d.oldFileInPlace)
	reg.Step(`^the "([^"]+)" file is byte-identical to the old one$`, d.fileUnchanged)
	reg.Step(`^there is no "([^"]+)" file$`, d.noFile)
	reg.Step(`^no temporary file is left beside the "([^"]+)" file$`, d.noTempFile)
	reg.Step(`^FlowNet has run the network for the scope's business key with the Shift_JIS export wrapper as "([^"]+)" and exited with code (\d+)$`, d.runsWithSJISWrapper)
	reg.Step(`^FlowNet reruns the run from node "([^"]+)" by its id with the Shift_JIS export wrapper as "([^"]+)"$`, d.rerunsWithSJISWrapper)
	reg.Step(`^the output audit summary of node "([^"]+)" records sink "([^"]+)" with (\d+) rows, encoding "([^"]+)" and a size above 0$`, d.outputAuditSummary)
	reg.Step(`^the exported "([^"]+)" file decodes strictly as "(utf8|sjis)" and is the CSV input's rows as CRLF CSV$`, d.exportedFileIs)
	reg.Step(`^the sha256 of the exported "([^"]+)" file is the one in the output audit summary of node "([^"]+)"$`, d.exportedSHAIsReceipt)
	reg.Step(`^the exported "([^"]+)" file and its receipt have the sha256 of the first export$`, d.sameAsFirstExport)
	reg.Step(`^the exported "([^"]+)" file is copied unchanged to the CSV input of the current network$`, d.copyExportToInput)
	reg.Step(`^the scope's CSV input holds (\d+) rows in UTF-8$`, d.inputHoldsRows)
	reg.Step(`^the scope's CSV input holds (\d+) rows in Shift_JIS$`, d.inputHoldsSJISRows)
	reg.Step(`^the scope's CSV input holds (\d+) rows of Japanese text in UTF-8$`, d.inputHoldsJapaneseRows)
	reg.Step(`^the exported "([^"]+)" file is, byte for byte, the CSV input's rows as CRLF CSV encoded by iconv's CP932$`, d.exportedBytesAreIconvCP932)
	reg.Step(`^FlowNet runs the network for the scope's business key while the memory of its kSQL-Flow child is sampled$`, d.runsMeasured)
	reg.Step(`^the wall time and the peak memory of the kSQL-Flow child were measured$`, d.measured)
	reg.Step(`^the scope's rows are deleted from the CSV fixture app$`, d.rowsDeleted)
	reg.Step(`^the kSQL-Flow child's kintone traffic goes through a proxy that answers its (\d+)(?:st|nd|rd|th) records write to the CSV fixture app with HTTP 400 once$`, d.writeFaultProxy)
	reg.Step(`^the write-fault proxy answered (\d+) synthetic HTTP 400s?$`, d.proxyFaulted)
	reg.Step(`^the CSV fixture app holds some but not all rows of the CSV input, and their count is noted$`, d.someRows)
	reg.Step(`^the CSV fixture app still holds the noted count of rows of the scope$`, d.sameCount)
	reg.Step(`^the CSV input is rewritten with one value changed$`, d.rewriteOneValue)
	reg.Step(`^cli-kintone imports the exported "([^"]+)" file into the CSV fixture app with --update-key test_key as "([^"]+)"$`, d.cliKintoneImports)
	reg.Step(`^the output of "([^"]+)" holds no API token$`, d.outputHoldsNoToken)
	reg.Step(`^the scope's CSV input holds (\d+) rows in UTF-8 behind a directory link that leaves the IO root$`, d.inputBehindLink)
	reg.Step(`^FlowNet runs the network for the scope's business key with a kSQL-Flow whose capabilities lack importCsv as "([^"]+)"$`, d.runsWithLegacyKsqlFlow)
	reg.Step(`^the latest attempt of node "([^"]+)" never started: no start marker and no runner start marker$`, d.neverStarted)
	reg.Step(`^the input audit summary of node "([^"]+)" records input "([^"]+)" with the CSV input's sha256 and size, (\d+) rows and encoding "([^"]+)"$`, d.inputAuditSummary)
	reg.Step(`^the CSV fixture app holds every row of the CSV input exactly once with its value$`, d.appHoldsEveryRow)
	reg.Step(`^the CSV fixture app holds no row of the scope$`, d.appHoldsNoRow)
	reg.Step(`^no state or audit record of the run holds a path of the IO root or a cell value of the CSV input$`, d.noLeak)
}

// csvState is the scenario's IO roots (by scope id) and the CSV input last written.
type csvState struct {
	roots      map[string]string // scope id -> IO root (KSQL_FLOWNET_IO_DIR given to FlowNet)
	input      string            // absolute path of the CSV input (as the harness wrote it)
	sha256     string
	bytes      int
	rows       [][2]string // key, value
	reader     *kintoneapi.Client
	lastExport map[string]string         // sink -> the output file located last (any network)
	proxies    map[string]*csvFaultProxy // scope id -> its kSQL-Flow write-fault proxy (csvfault.go)
	noted      int                       // a row count noted by a step
	// by "<network id>/<sink>": the output file's path, the receipt sha256 last read from an
	// output audit summary, the sha256 of the first export, the bytes of an old file
	outputs, receipts, first map[string]string
	old                      map[string][]byte
	// the last measured run: FlowNet's wall time, the kSQL-Flow child's lifetime as seen,
	// its peak RSS and how many samples were taken
	wall, child time.Duration
	peakRSS     uint64
	samples     int
}

// key names a sink of the current network (outputs of two networks may share a file).
func (s *csvState) key(fx *fixtureState, sink string) string {
	if fx.current() == nil {
		return fx.scope().ID() + "/" + sink
	}
	return fx.current().NetworkID + "/" + sink
}

var csvKey = scenario.NewKey[csvState]("csv")

// csvIOEnv is KSQL_FLOWNET_IO_DIR for the scope, once the scenario made its IO root, and the
// kSQL-Flow config copy and CA bundle of the scope's write-fault proxy, if it has one.
func csvIOEnv(sc *scene, fx *fixtureState) []string {
	s := csvKey.Of(sc.st)
	var env []string
	if root := s.roots[fx.scope().ID()]; root != "" {
		env = append(env, "KSQL_FLOWNET_IO_DIR="+root)
	}
	if p := s.proxies[fx.scope().ID()]; p != nil {
		env = append(env, "KSQL_FLOW_CONFIG="+p.config, "SSL_CERT_FILE="+p.caBundle, "NODE_EXTRA_CA_CERTS="+p.caBundle)
	}
	return env
}

// ioRoot makes (once per scope) <base>/<scope>_XXXX/{in,out}; base is the suite's
// KSQL_FLOWNET_IO_DIR, on the sandbox by default the scenario work dir.
func (s *csvState) ioRoot(sc *scene, fx *fixtureState) (string, error) {
	if s.roots == nil {
		s.roots = map[string]string{}
	}
	id := fx.scope().ID()
	if r := s.roots[id]; r != "" {
		return r, nil
	}
	base := filepath.Join(sc.st.WorkDir, "io")
	if sc.suite.Target.Name == string(safety.TargetLive) {
		if base = sc.suite.IODir; base == "" {
			return "", fmt.Errorf("KSQL_FLOWNET_IO_DIR is not set: the CSV IO root of a live scenario lives under it")
		}
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
	sc.st.Note("CSV IO root of "+id, filepath.Base(root))
	scopeID := id
	sc.st.Defer("delete the CSV fixture rows of "+scopeID, func(ctx context.Context) error {
		return deleteCSVRows(ctx, sc, scopeID)
	})
	return root, nil
}

// inputTemplate reads nodes[].inputs.source of the rendered network.
func inputTemplate(fx *fixtureState) (string, error) {
	n, err := fx.rendered()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(n.Path)
	if err != nil {
		return "", err
	}
	var doc struct {
		Nodes []struct {
			Inputs map[string]string `yaml:"inputs"`
		} `yaml:"nodes"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("rendered network %s: %w", filepath.Base(n.Path), err)
	}
	for _, nd := range doc.Nodes {
		if t := nd.Inputs["source"]; t != "" {
			return t, nil
		}
	}
	return "", fmt.Errorf("network %s has no node with an input \"source\"", n.FixtureNetworkID)
}

var placeholder = regexp.MustCompile(`\{([a-z_]+)\}`)

// inputRelPath expands the input template for the scope's business key and the profile.
func inputRelPath(sc *scene, fx *fixtureState) (string, error) {
	tmpl, err := inputTemplate(fx)
	if err != nil {
		return "", err
	}
	vals := map[string]string{"business_key": fx.scope().BusinessKey(), "profile": sc.suite.Target.Profile}
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
func (s *csvState) writeInput(sc *scene, fx *fixtureState, path string, n int) error {
	return s.writeEncodedInput(sc, fx, path, n, "utf8")
}

// writeEncodedInput writes n rows (CRLF) in the encoding (utf8 or sjis; the content is ASCII).
func (s *csvState) writeEncodedInput(sc *scene, fx *fixtureState, path string, n int, encoding string) error {
	return s.writeRows(sc, fx, path, n, encoding, "")
}

// japaneseCells is the text the Japanese CSV rows carry after their ASCII marker (issue 34):
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
func (s *csvState) rowsCSV() string {
	var b strings.Builder
	b.WriteString("test_key,test_value\r\n")
	for _, r := range s.rows {
		b.WriteString(r[0] + "," + r[1] + "\r\n")
	}
	return b.String()
}

// writeRows writes n rows (CRLF) in the encoding; a non-empty lang "ja" appends Japanese text
// to each value (japaneseCells; UTF-8 only, the Shift_JIS bytes are the exporter's to write).
func (s *csvState) writeRows(sc *scene, fx *fixtureState, path string, n int, encoding, lang string) error {
	prefix := kintone.CSVRowPrefix(fx.scope().ID())
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
	sum := sha256.Sum256(data)
	s.input, s.sha256, s.bytes = path, hex.EncodeToString(sum[:]), len(data)
	sc.st.Note("CSV input", fmt.Sprintf("%d rows, %s, %d bytes, sha256 %s", n, encoding, len(data), s.sha256))
	return nil
}

func (csvDomain) ioRootWithoutInput(ctx context.Context) error {
	_, err := csvKey.Of(sceneOf(ctx).st).ioRoot(sceneOf(ctx), fixturesOf(ctx))
	return err
}

func (csvDomain) inputHoldsRows(ctx context.Context, n int) error {
	return inputRows(ctx, n, "utf8", "")
}

func (csvDomain) inputHoldsSJISRows(ctx context.Context, n int) error {
	return inputRows(ctx, n, "sjis", "")
}

// inputHoldsJapaneseRows writes n UTF-8 rows whose values carry Japanese text (japaneseCells).
func (csvDomain) inputHoldsJapaneseRows(ctx context.Context, n int) error {
	return inputRows(ctx, n, "utf8", "ja")
}

// inputRows writes the scope's CSV input of n rows in encoding; lang "ja" adds Japanese text.
func inputRows(ctx context.Context, n int, encoding, lang string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	root, err := s.ioRoot(sc, fx)
	if err != nil {
		return err
	}
	rel, err := inputRelPath(sc, fx)
	if err != nil {
		return err
	}
	return s.writeRows(sc, fx, filepath.Join(root, "in", rel), n, encoding, lang)
}

// inputBehindLink writes the input outside the IO root and replaces the first directory of
// the input path (in/csv1) by a directory symlink (a junction would do on Windows) to it.
func (csvDomain) inputBehindLink(ctx context.Context, n int) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	root, err := s.ioRoot(sc, fx)
	if err != nil {
		return err
	}
	rel, err := inputRelPath(sc, fx)
	if err != nil {
		return err
	}
	parts := strings.SplitN(filepath.ToSlash(rel), "/", 2)
	if len(parts) != 2 {
		return fmt.Errorf("input path %q has no directory to replace by a link", rel)
	}
	outside, err := os.MkdirTemp(filepath.Dir(root), fx.scope().ID()+"_outside_")
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
	sc.st.Note("directory link", filepath.Join("in", parts[0])+" -> a directory outside the IO root")
	return nil
}

// runsWithLegacyKsqlFlow plays a kSQL-Flow built before CSV import, as the original's
// generated stub did (scenarios.md §2.8.1): the target's own kSQL-Flow behind flowtest's
// wrapper, whose `capabilities --json` reports importCsv false.
func (csvDomain) runsWithLegacyKsqlFlow(ctx context.Context, name string) error {
	env, err := wrappedKsqlFlow(sceneOf(ctx), WrapLegacyCapabilities)
	if err != nil {
		return err
	}
	c, err := runNetworkWith(ctx, name, env, "--business-key", fixturesOf(ctx).scope().BusinessKey())
	if err != nil {
		return err
	}
	return c.finish(ctx)
}

// The kSQL-Flow wrapper: `flowtest ksql-flow-wrapper` (cmd/flowtest/ksqlwrap.go) and its
// modes, shared here so the steps and the command cannot disagree on them.
const (
	KsqlFlowWrapperCommand = "ksql-flow-wrapper"
	WrapLegacyCapabilities = "legacy-capabilities" // capabilities --json says importCsv false
	WrapExportSJIS         = "export-sjis"         // export runs get --export-encoding sjis
)

// wrappedKsqlFlow is FlowNet's KSQL_FLOW_BIN / KSQL_FLOW_BIN_ARGS for the target's own
// kSQL-Flow launcher wrapped by flowtest in mode: the same on the sandbox and on a live
// target, since only the launcher changes.
func wrappedKsqlFlow(sc *scene, mode string) ([]string, error) {
	self := sc.suite.FlowtestBin
	if self == "" {
		return nil, fmt.Errorf("the kSQL-Flow wrapper (%s) needs the flowtest executable, which this run does not know", mode)
	}
	k := sc.suite.Target.KsqlFlow
	if k.Path == "" {
		return nil, fmt.Errorf("the target has no kSQL-Flow launcher to wrap (%s)", mode)
	}
	args := append([]string{KsqlFlowWrapperCommand, "--mode", mode, "--launcher-args", strconv.Itoa(len(k.Args)), "--", k.Path}, k.Args...)
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return []string{"KSQL_FLOW_BIN=" + self, "KSQL_FLOW_BIN_ARGS=" + string(b)}, nil
}

func (csvDomain) neverStarted(ctx context.Context, name string) error {
	sc := sceneOf(ctx)
	node, err := fixturesOf(ctx).node(name)
	if err != nil {
		return err
	}
	atts, err := attemptsOf(ctx, node.ID)
	if err != nil {
		return err
	}
	if err := sc.st.Assert("attempts of node "+name, ">= 1", len(atts), len(atts) >= 1); err != nil {
		return err
	}
	a := atts[len(atts)-1]
	if err := sc.st.Equal("execution_started_at of the latest attempt of "+name, "(none)", orNone(a.ExecutionStartedAt)); err != nil {
		return err
	}
	return sc.st.Equal("runner_execution_started_at of the latest attempt of "+name, "(none)", orNone(a.RunnerExecutionStartedAt))
}

// inputAudit is the KSQL_FLOWNET_INPUT_AUDIT v1 summary as the steps read it.
type inputAudit struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	Inputs  []struct {
		Name     string `json:"name"`
		SHA256   string `json:"baseline_sha256"`
		Bytes    int64  `json:"bytes"`
		Rows     *int   `json:"rows"`
		Encoding string `json:"encoding"`
	} `json:"inputs"`
}

func (csvDomain) inputAuditSummary(ctx context.Context, name, input string, rows int, encoding string) error {
	sc := sceneOf(ctx)
	s := csvKey.Of(sc.st)
	var sum inputAudit
	if err := latestAttemptSummary(ctx, fixturesOf(ctx), name, &sum); err != nil {
		return err
	}
	if err := sc.st.Equal("kind and version of the input audit summary", "KSQL_FLOWNET_INPUT_AUDIT v1", fmt.Sprintf("%s v%d", sum.Kind, sum.Version)); err != nil {
		return err
	}
	var names []string
	for _, in := range sum.Inputs {
		names = append(names, in.Name)
	}
	if err := sc.st.Equal("inputs of the input audit summary", input, strings.Join(names, ",")); err != nil {
		return err
	}
	in := sum.Inputs[0]
	if err := sc.st.Equal("baseline sha256 of input "+input+" (the file the harness wrote)", s.sha256, in.SHA256); err != nil {
		return err
	}
	if err := sc.st.Equal("bytes of input "+input, int64(s.bytes), in.Bytes); err != nil {
		return err
	}
	got := -1
	if in.Rows != nil {
		got = *in.Rows
	}
	if err := sc.st.Equal("rows of input "+input, rows, got); err != nil {
		return err
	}
	return sc.st.Equal("encoding of input "+input, encoding, in.Encoding)
}

// csvReader reads the CSV fixture app with its view-only token.
func (s *csvState) csvReader(sc *scene) (*kintoneapi.Client, error) {
	if s.reader == nil {
		r, err := sc.suite.Target.ReadClient(target.RoleCSV)
		if err != nil {
			return nil, fmt.Errorf("CSV fixture app reader: %w", err)
		}
		s.reader = r
	}
	return s.reader, nil
}

// scopeRows reads the CSV fixture app's rows of a scope: kintone's like is a partial match,
// so the prefix is checked exactly here.
func scopeRows(ctx context.Context, sc *scene, scopeID string) ([]csvRow, error) {
	r, err := csvKey.Of(sc.st).csvReader(sc)
	if err != nil {
		return nil, err
	}
	prefix := kintone.CSVRowPrefix(scopeID)
	recs, err := r.GetAll(ctx, sc.app(target.RoleCSV), fmt.Sprintf("test_key like %s", quote(prefix)), nil)
	if err != nil {
		return nil, fmt.Errorf("read the CSV fixture app: %w", err)
	}
	var out []csvRow
	for _, rec := range recs {
		if row := decodeCSVRow(rec); strings.HasPrefix(row.Key, prefix) {
			out = append(out, row)
		}
	}
	return out, nil
}

func (csvDomain) appHoldsEveryRow(ctx context.Context) error {
	sc := sceneOf(ctx)
	s := csvKey.Of(sc.st)
	rows, err := scopeRows(ctx, sc, fixturesOf(ctx).scope().ID())
	if err != nil {
		return err
	}
	count := map[string]int{}
	value := map[string]string{}
	for _, r := range rows {
		count[r.Key]++
		value[r.Key] = r.Value
	}
	var missing, dup, wrong []string
	for _, want := range s.rows {
		switch {
		case count[want[0]] == 0:
			missing = append(missing, want[0])
		case count[want[0]] > 1:
			dup = append(dup, want[0])
		case value[want[0]] != want[1]:
			wrong = append(wrong, want[0])
		}
	}
	if err := sc.st.Equal("rows of the scope in the CSV fixture app", len(s.rows), len(rows)); err != nil {
		return err
	}
	return sc.st.Equal("CSV input rows missing, duplicated or with another value in the CSV fixture app", "(none)",
		orNone(strings.Join(append(append(missing, dup...), wrong...), ",")))
}

func (csvDomain) appHoldsNoRow(ctx context.Context) error {
	sc := sceneOf(ctx)
	rows, err := scopeRows(ctx, sc, fixturesOf(ctx).scope().ID())
	if err != nil {
		return err
	}
	return sc.st.Equal("rows of the scope in the CSV fixture app", 0, len(rows))
}

// noLeak scans every field of every state and audit record carrying the run's run_id for
// the CSV input's absolute path (and the IO root's) and for any cell value of the input.
func (csvDomain) noLeak(ctx context.Context) error {
	sc := sceneOf(ctx)
	s := csvKey.Of(sc.st)
	if s.input == "" {
		return fmt.Errorf("no CSV input was written in this scenario")
	}
	runID, err := currentRunID(ctx)
	if err != nil {
		return err
	}
	needles := []string{s.input, s.roots[fixturesOf(ctx).scope().ID()]}
	if real, err := filepath.EvalSymlinks(s.input); err == nil && real != s.input {
		needles = append(needles, real)
	}
	for _, r := range s.rows {
		needles = append(needles, r[0], r[1])
	}
	var leaks []string
	scanned := 0
	for _, role := range []string{target.RoleState, target.RoleAudit} {
		recs, err := readExact(ctx, sc, role, decodeRecordText, match{"run_id", runID})
		if err != nil {
			return err
		}
		scanned += len(recs)
		for _, rec := range recs {
			codes := make([]string, 0, len(rec.Fields))
			for c := range rec.Fields {
				codes = append(codes, c)
			}
			sort.Strings(codes)
			for _, c := range codes {
				for _, n := range needles {
					if n != "" && strings.Contains(rec.Fields[c], n) {
						leaks = append(leaks, fmt.Sprintf("%s %s $id %s field %s", role, rec.RecordType, rec.RecordID, c))
						break
					}
				}
			}
		}
	}
	if err := sc.st.Assert("state and audit records of the run scanned", ">= 1", scanned, scanned >= 1); err != nil {
		return err
	}
	return sc.st.Equal("state and audit fields of the run holding a path of the IO root or a cell value of the CSV input", "(none)", orNone(strings.Join(leaks, "; ")))
}

// deleteCSVRows deletes the scope's rows and finalize marker of the CSV fixture app
// through the write guard.
func deleteCSVRows(ctx context.Context, sc *scene, scopeID string) error {
	rows, err := scopeRows(ctx, sc, scopeID)
	if err != nil {
		return err
	}
	r, err := csvKey.Of(sc.st).csvReader(sc)
	if err != nil {
		return err
	}
	marker := kintone.CSVMarkerKey(scopeID)
	recs, err := r.GetAll(ctx, sc.app(target.RoleCSV), "test_key in ("+quote(marker)+")", nil)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if row := decodeCSVRow(rec); row.Key == marker {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	g, app, err := guardedCSV(sc, scopeID)
	if err != nil {
		return err
	}
	for len(rows) > 0 {
		n := min(len(rows), 100)
		ids := make([]string, n)
		for i := range n {
			ids[i] = rows[i].RecordID
		}
		if err := g.DeleteRecords(ctx, app, ids, nil); err != nil {
			return errors.Join(fmt.Errorf("delete CSV fixture rows of %s", scopeID), err)
		}
		rows = rows[n:]
	}
	return nil
}

// csvReplacements are the SQL placeholder tokens of the CSV fixtures for the scope.
func csvReplacements(fx *fixtureState, encoding string) map[string]string {
	id := fx.scope().ID()
	return map[string]string{"__CSV1_ENCODING__": encoding, "__CSV_ROW_PREFIX__": kintone.CSVRowPrefix(id),
		"__CSV_MARKER_KEY__": kintone.CSVMarkerKey(id)}
}

func (csvDomain) theCSVFixture(ctx context.Context, name, encoding string) error {
	fx := fixturesOf(ctx)
	return fx.renderReplacing(sceneOf(ctx), name, "", csvReplacements(fx, encoding))
}

func (csvDomain) theCSVFixtureAs(ctx context.Context, name, encoding, label string) error {
	fx := fixturesOf(ctx)
	return fx.renderReplacing(sceneOf(ctx), name, label, csvReplacements(fx, encoding))
}

func (csvDomain) theCSVFixtureInASubScope(ctx context.Context, name, encoding, label string) error {
	return (csvDomain{}).theCSVFixtureInASubScopeAs(ctx, name, encoding, label, "")
}

func (csvDomain) theCSVFixtureInASubScopeAs(ctx context.Context, name, encoding, label, network string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	if err := fx.enterSubScope(sc, label); err != nil {
		return err
	}
	return fx.renderReplacing(sc, name, network, csvReplacements(fx, encoding))
}

// guardedCSV is a write-guarded client of the CSV fixture app for the scope.
func guardedCSV(sc *scene, scopeID string) (*kintone.Client, string, error) {
	t := sc.suite.Target
	a, err := t.App(target.RoleCSV)
	if err != nil {
		return nil, "", err
	}
	hc, err := kintoneapi.HTTPClientWithCA(t.CAFile)
	if err != nil {
		return nil, "", err
	}
	api := kintoneapi.New(t.BaseURL, hc, map[string]string{a.ID: a.Token("full")})
	g, err := kintone.New(api, kintone.Apps{State: t.Apps[target.RoleState].ID, Audit: t.Apps[target.RoleAudit].ID,
		Request: t.Apps[target.RoleRequest].ID, Log: t.Apps[target.RoleLog].ID, CSV: a.ID}, scopeID, kintone.Options{Profile: t.Profile})
	return g, a.ID, err
}

// markerRow adds the scope's finalize marker row through the write guard (deleted with the
// scope's rows after the scenario).
func (csvDomain) markerRow(ctx context.Context) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	if _, err := csvKey.Of(sc.st).ioRoot(sc, fx); err != nil { // registers the cleanup
		return err
	}
	g, app, err := guardedCSV(sc, fx.scope().ID())
	if err != nil {
		return err
	}
	_, _, err = g.AddRecord(ctx, app, kintoneapi.Values(map[string]any{"test_key": kintone.CSVMarkerKey(fx.scope().ID()), "test_value": "FMK"}))
	return err
}

func (csvDomain) inputWithFirstValue(ctx context.Context, n int, first string) error {
	if err := (csvDomain{}).inputHoldsRows(ctx, n); err != nil {
		return err
	}
	sc := sceneOf(ctx)
	s := csvKey.Of(sc.st)
	s.rows[0][1] = first + s.rows[0][1]
	data := []byte(s.rowsCSV())
	if err := os.WriteFile(s.input, data, 0o600); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	s.sha256, s.bytes = hex.EncodeToString(sum[:]), len(data)
	return nil
}

// addOutput gives a node of the rendered network (the working copy) one more output sink,
// checked by the preflight's fixture rules like every edited working copy.
func (csvDomain) addOutput(ctx context.Context, node, sink, tmpl string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	n, err := fx.rendered()
	if err != nil {
		return err
	}
	rn, err := fx.node(node)
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
	if sc.suite.CheckFixture == nil {
		return fmt.Errorf("no fixture check was wired: a working copy cannot be edited after preflight")
	}
	if err := sc.suite.CheckFixture(safety.Fixture{Scenario: sc.st.ID, Kind: safety.FixtureNetwork, Name: fx.fileName(), Path: n.Path, Content: edited}); err != nil {
		return err
	}
	if err := os.WriteFile(n.Path, edited, 0o644); err != nil {
		return err
	}
	sc.st.Note("working copy of the network edited", fmt.Sprintf("node %s: output %s at %s", node, sink, tmpl))
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
func (s *csvState) outputPath(sc *scene, fx *fixtureState, sink string) (string, error) {
	if s.outputs == nil {
		s.outputs, s.receipts, s.first, s.old = map[string]string{}, map[string]string{}, map[string]string{}, map[string][]byte{}
	}
	if p := s.outputs[s.key(fx, sink)]; p != "" {
		return p, nil
	}
	root, err := s.ioRoot(sc, fx)
	if err != nil {
		return "", err
	}
	n, err := fx.rendered()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(n.Path)
	if err != nil {
		return "", err
	}
	var doc struct {
		Nodes []struct {
			ID      string            `yaml:"id"`
			Outputs map[string]string `yaml:"outputs"`
		} `yaml:"nodes"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	for _, nd := range doc.Nodes {
		tmpl := nd.Outputs[sink]
		if tmpl == "" {
			continue
		}
		vals := map[string]string{"business_key": fx.scope().BusinessKey(), "profile": sc.suite.Target.Profile, "node_id": nd.ID}
		rel := placeholder.ReplaceAllStringFunc(tmpl, func(m string) string { return url.PathEscape(vals[m[1:len(m)-1]]) })
		p := filepath.Join(root, "out", filepath.FromSlash(rel))
		s.outputs[s.key(fx, sink)] = p
		if s.lastExport == nil {
			s.lastExport = map[string]string{}
		}
		s.lastExport[sink] = p
		return p, nil
	}
	return "", fmt.Errorf("network %s has no output sink %q", n.FixtureNetworkID, sink)
}

func (csvDomain) oldFileInPlace(ctx context.Context, sink string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	p, err := s.outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	old := []byte("test_key,test_value\r\nOLD_FILE_BEFORE_THE_RUN,old\r\n")
	s.old[s.key(fx, sink)] = old
	return os.WriteFile(p, old, 0o644)
}

func (csvDomain) fileUnchanged(ctx context.Context, sink string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	p, err := s.outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	want, ok := s.old[s.key(fx, sink)]
	if !ok {
		return fmt.Errorf("no old %q file was put in place", sink)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		return sc.st.Equal("sha256 of the "+sink+" file (the old one)", digest(want), "unreadable: "+err.Error())
	}
	return sc.st.Equal("sha256 of the "+sink+" file (the old one)", digest(want), digest(got))
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (csvDomain) noFile(ctx context.Context, sink string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	p, err := csvKey.Of(sc.st).outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	seen := "absent"
	if st, err := os.Lstat(p); err == nil {
		seen = fmt.Sprintf("present, %d bytes", st.Size())
	}
	return sc.st.Equal("the "+sink+" file", "absent", seen)
}

func (csvDomain) noTempFile(ctx context.Context, sink string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	p, err := csvKey.Of(sc.st).outputPath(sc, fx, sink)
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
	return sc.st.Equal("temporary files beside the "+sink+" file", "(none)", orNone(strings.Join(tmp, ",")))
}

// sjisWrapper plays the original's csv2-encoding-wrapper.mjs as KSQL_FLOW_BIN: export runs
// get --export-encoding sjis (scenarios.md §2.9).
func sjisWrapper(sc *scene) ([]string, error) {
	return wrappedKsqlFlow(sc, WrapExportSJIS)
}

func (csvDomain) runsWithSJISWrapper(ctx context.Context, name string, code int) error {
	sc := sceneOf(ctx)
	env, err := sjisWrapper(sc)
	if err != nil {
		return err
	}
	c, err := runNetworkWith(ctx, name, env, "--business-key", fixturesOf(ctx).scope().BusinessKey())
	if err != nil {
		return err
	}
	if err := c.finish(ctx); err != nil {
		return err
	}
	return sc.st.Equal("exit code of "+name, code, c.result.ExitCode)
}

func (csvDomain) rerunsWithSJISWrapper(ctx context.Context, node, name string) error {
	sc := sceneOf(ctx)
	env, err := sjisWrapper(sc)
	if err != nil {
		return err
	}
	rn, err := fixturesOf(ctx).node(node)
	if err != nil {
		return err
	}
	id, err := currentRunID(ctx)
	if err != nil {
		return err
	}
	if err := snapshotAttempts(ctx, name); err != nil {
		return err
	}
	c, err := runNetworkWith(ctx, name, env, "--resume-run", id, "--rerun-from", rn.ID)
	if err != nil {
		return err
	}
	return c.finish(ctx)
}

// outputAudit is the KSQL_FLOWNET_OUTPUT_AUDIT v1 summary as the steps read it.
type outputAudit struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	Outputs []struct {
		Name     string `json:"name"`
		SHA256   string `json:"sha256"`
		Bytes    int64  `json:"bytes"`
		Rows     int    `json:"rows"`
		Encoding string `json:"encoding"`
	} `json:"outputs"`
}

func (csvDomain) outputAuditSummary(ctx context.Context, name, sink string, rows int, encoding string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	if _, err := s.outputPath(sc, fx, sink); err != nil {
		return err
	}
	var sum outputAudit
	if err := latestAttemptSummary(ctx, fx, name, &sum); err != nil {
		return err
	}
	if err := sc.st.Equal("kind and version of the output audit summary", "KSQL_FLOWNET_OUTPUT_AUDIT v1", fmt.Sprintf("%s v%d", sum.Kind, sum.Version)); err != nil {
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
	if err := sc.st.Equal("encoding of sink "+sink, encoding, o.Encoding); err != nil {
		return err
	}
	if err := sc.st.Assert("bytes of sink "+sink, "> 0", o.Bytes, o.Bytes > 0); err != nil {
		return err
	}
	if err := sc.st.Assert("sha256 of sink "+sink, "64 hex", o.SHA256, len(o.SHA256) == 64); err != nil {
		return err
	}
	s.receipts[s.key(fx, sink)] = o.SHA256
	return nil
}

// readExport reads the sink's exported file; one that cannot be read fails as an assertion.
func (s *csvState) readExport(sc *scene, fx *fixtureState, sink string) ([]byte, error) {
	p, err := s.outputPath(sc, fx, sink)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, sc.st.Equal("the exported "+sink+" file", "readable", err.Error())
	}
	return data, nil
}

// exportedFileIs decodes the artefact strictly and compares it with the expected CSV: the
// header and the CSV input's rows, CRLF, in input order.
func (csvDomain) exportedFileIs(ctx context.Context, sink, encoding string) error {
	sc := sceneOf(ctx)
	s := csvKey.Of(sc.st)
	data, err := s.readExport(sc, fixturesOf(ctx), sink)
	if err != nil {
		return err
	}
	text, derr := strictDecode(data, encoding)
	if err := sc.st.Assert("the exported "+sink+" file decodes strictly as "+encoding, "decodes", fmt.Sprint(derr), derr == nil); err != nil {
		return err
	}
	want := s.rowsCSV()
	seen := "identical"
	if text != want {
		seen = fmt.Sprintf("differs: %d bytes decoded, %d expected; first line %q", len(text), len(want), firstLine(text))
	}
	return sc.st.Equal("the exported "+sink+" file against the expected CRLF CSV", "identical", seen)
}

// exportedBytesAreIconvCP932 compares the exported file's bytes with the expected CSV encoded
// by the distribution's iconv (-t CP932) as a child process: an encoder that is not the one
// the sandbox uses (golang.org/x/text), so an exporter and this check cannot share a mistake.
// Strict decoding alone cannot see an export in another Japanese encoding whose codes decode
// to the same text (CP932 has two codes for ￢ and ㈱). Without iconv the scenario is blocked.
func (csvDomain) exportedBytesAreIconvCP932(ctx context.Context, sink string) error {
	sc := sceneOf(ctx)
	s := csvKey.Of(sc.st)
	data, err := s.readExport(sc, fixturesOf(ctx), sink)
	if err != nil {
		return err
	}
	want, err := iconvCP932(ctx, s.rowsCSV())
	if err != nil {
		return err
	}
	seen := "identical"
	if !bytes.Equal(data, want) {
		seen = firstByteDifference(data, want)
	}
	return sc.st.Equal("the exported "+sink+" file's bytes against iconv's CP932", "identical", seen)
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

func (csvDomain) exportedSHAIsReceipt(ctx context.Context, sink, name string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	p, err := s.outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	rc := s.receipts[s.key(fx, sink)]
	if rc == "" {
		return fmt.Errorf("no output audit summary of node %s was read for sink %s (missing the output audit step)", name, sink)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if s.first[s.key(fx, sink)] == "" {
		s.first[s.key(fx, sink)] = digest(data)
	}
	return sc.st.Equal("sha256 of the exported "+sink+" file against the receipt of node "+name, rc, digest(data))
}

func (csvDomain) sameAsFirstExport(ctx context.Context, sink string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	p, err := s.outputPath(sc, fx, sink)
	if err != nil {
		return err
	}
	first := s.first[s.key(fx, sink)]
	if first == "" {
		return fmt.Errorf("the first export of %s was not checked against its receipt", sink)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := sc.st.Equal("receipt sha256 of sink "+sink+" against the first export", first, s.receipts[s.key(fx, sink)]); err != nil {
		return err
	}
	return sc.st.Equal("sha256 of the exported "+sink+" file against the first export", first, digest(data))
}

// copyExportToInput copies the artefact's bytes as the current network's CSV input.
func (csvDomain) copyExportToInput(ctx context.Context, sink string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	src := s.lastExport[sink]
	if src == "" {
		return fmt.Errorf("no exported %s file was located yet", sink)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	root, err := s.ioRoot(sc, fx)
	if err != nil {
		return err
	}
	rel, err := inputRelPath(sc, fx)
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
	s.input, s.sha256, s.bytes = dst, digest(data), len(data)
	sc.st.Note("CSV input copied from the export", fmt.Sprintf("%d bytes, sha256 %s", len(data), s.sha256))
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

// runsMeasured runs the network to its end while a sampler follows the kSQL-Flow child (found
// by its --import-csv argument under the scope's IO root) and reads its resident memory every
// 10 ms with gopsutil: evidence, not a timed assertion (speed targets belong to benchmarks).
func (csvDomain) runsMeasured(ctx context.Context) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	root := s.roots[fx.scope().ID()]
	if root == "" {
		return fmt.Errorf("no CSV IO root was made for the scope (missing the CSV input step)")
	}
	start := time.Now()
	c, err := runNetwork(ctx, "")
	if err != nil {
		return err
	}
	done := make(chan struct{})
	sampled := make(chan struct{})
	match := proc.AllOf(proc.ArgvHasSeq("--import-csv"), proc.ArgvContains(filepath.Base(root)))
	s.peakRSS, s.samples, s.child = 0, 0, 0
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var child *process.Process
		var first, last time.Time
		for {
			select {
			case <-done:
				if !first.IsZero() {
					s.child = last.Sub(first)
				}
				return
			case <-tick.C:
			}
			if child == nil {
				pids, err := proc.FindByArgv(ctx, match)
				if err != nil || len(pids) == 0 {
					continue
				}
				child = &process.Process{Pid: pids[0]}
			}
			mi, err := child.MemoryInfoWithContext(ctx)
			if err != nil {
				continue // gone (or not readable): the last sample stands
			}
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			last = now
			s.samples++
			s.peakRSS = max(s.peakRSS, mi.RSS)
		}
	}()
	err = c.finish(ctx)
	s.wall = time.Since(start)
	close(done)
	<-sampled
	return err
}

func (csvDomain) measured(ctx context.Context) error {
	sc := sceneOf(ctx)
	s := csvKey.Of(sc.st)
	line := fmt.Sprintf("FlowNet wall %.1f s; kSQL-Flow child seen for %.1f s, peak RSS %.1f MiB in %d samples; input %d rows, %d bytes",
		s.wall.Seconds(), s.child.Seconds(), float64(s.peakRSS)/(1<<20), s.samples, len(s.rows), s.bytes)
	sc.st.Note("CSV import measurement", line)
	if sc.st.Log != nil {
		fmt.Fprintf(sc.st.Log, "  measured: %s\n", line)
	}
	return sc.st.Assert("memory samples of the kSQL-Flow child", ">= 1 sample with a resident size", fmt.Sprintf("%d samples, peak %d bytes", s.samples, s.peakRSS), s.samples >= 1 && s.peakRSS > 0)
}

func (csvDomain) rowsDeleted(ctx context.Context) error {
	return deleteCSVRows(ctx, sceneOf(ctx), fixturesOf(ctx).scope().ID())
}

const kindCLIKintone = "cli-kintone"

// cliKintone finds the real cli-kintone: tools/cli-kintone/node_modules/.bin (installed,
// pinned, by `make cli-kintone`), else cli-kintone on PATH; Node.js must be on PATH too.
func cliKintone(sc *scene) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", scenario.Blocked("cli-kintone unavailable: Node.js is not on PATH (cli-kintone 1.19.2 needs Node.js >= 20; then make cli-kintone)")
	}
	name := "cli-kintone"
	if runtime.GOOS == "windows" {
		name += ".cmd"
	}
	local := filepath.Join(filepath.Dir(filepath.Dir(sc.suite.FixturesDir)), "tools", "cli-kintone", "node_modules", ".bin", name)
	if _, err := os.Stat(local); err == nil {
		return local, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", scenario.Blocked("cli-kintone unavailable: not installed (make cli-kintone installs the pinned @kintone/cli into tools/cli-kintone with npm ci)")
}

// cliKintoneImports runs `cli-kintone record import` on the artefact, exactly as exported,
// against the target's CSV fixture app, with the app's token in KINTONE_API_TOKEN (never
// on the command line) and the emulator's CA in NODE_EXTRA_CA_CERTS.
func (csvDomain) cliKintoneImports(ctx context.Context, sink, name string) error {
	sc, fx := sceneOf(ctx), fixturesOf(ctx)
	s := csvKey.Of(sc.st)
	file := s.lastExport[sink]
	if file == "" {
		return fmt.Errorf("no exported %s file was located yet", sink)
	}
	bin, err := cliKintone(sc)
	if err != nil {
		return err
	}
	t := sc.suite.Target
	a, err := t.App(target.RoleCSV)
	if err != nil {
		return err
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + sc.st.WorkDir, "KINTONE_API_TOKEN=" + a.Token("full"), "NO_COLOR=1"}
	if t.CAFile != "" {
		env = append(env, "NODE_EXTRA_CA_CERTS="+t.CAFile)
	}
	if sr := os.Getenv("SYSTEMROOT"); sr != "" {
		env = append(env, "SYSTEMROOT="+sr)
	}
	np := &namedProc{name: name, kind: kindCLIKintone, scope: fx.scope()}
	if err := startChild(ctx, np, proc.Spec{Path: bin, Args: []string{"record", "import", "--base-url", t.BaseURL, "--app", a.ID,
		"--file-path", file, "--update-key", "test_key", "--fields", "test_key,test_value", "--encoding", "utf8"}, Env: env, Dir: sc.st.WorkDir}); err != nil {
		return err
	}
	res, err := waitExit(ctx, name, np.proc)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		stderr, _ := np.proc.Stderr()
		return sc.st.Equal("exit code of "+name, 0, fmt.Sprintf("%d: %s", res.ExitCode, firstLine(stderr)))
	}
	return sc.st.Equal("exit code of "+name, 0, res.ExitCode)
}

func (csvDomain) outputHoldsNoToken(ctx context.Context, name string) error {
	sc := sceneOf(ctx)
	p, err := processesOf(ctx).resolve(`"` + name + `"`)
	if err != nil {
		return err
	}
	out, _ := p.proc.Stdout()
	errOut, _ := p.proc.Stderr()
	tok := sc.suite.Target.Apps[target.RoleCSV].Token("full")
	found := "no"
	if tok != "" && strings.Contains(out+errOut, tok) {
		found = "yes"
	}
	return sc.st.Equal("the CSV app token in the output of "+name, "no", found)
}

func (csvDomain) someRows(ctx context.Context) error {
	sc := sceneOf(ctx)
	s := csvKey.Of(sc.st)
	rows, err := scopeRows(ctx, sc, fixturesOf(ctx).scope().ID())
	if err != nil {
		return err
	}
	s.noted = len(rows)
	sc.st.Note("rows of the scope in the CSV fixture app", fmt.Sprint(len(rows)))
	return sc.st.Assert("rows of the scope in the CSV fixture app after the partial import", fmt.Sprintf("1..%d", len(s.rows)-1), len(rows), len(rows) >= 1 && len(rows) < len(s.rows))
}

func (csvDomain) sameCount(ctx context.Context) error {
	sc := sceneOf(ctx)
	rows, err := scopeRows(ctx, sc, fixturesOf(ctx).scope().ID())
	if err != nil {
		return err
	}
	return sc.st.Equal("rows of the scope in the CSV fixture app (as noted)", csvKey.Of(sc.st).noted, len(rows))
}

// rewriteOneValue changes the last row's value in place: same size class, another sha256.
func (csvDomain) rewriteOneValue(ctx context.Context) error {
	sc := sceneOf(ctx)
	s := csvKey.Of(sc.st)
	if s.input == "" || len(s.rows) == 0 {
		return fmt.Errorf("no CSV input was written in this scenario")
	}
	s.rows[len(s.rows)-1][1] += "_CHANGED"
	data := []byte(s.rowsCSV())
	if err := os.WriteFile(s.input, data, 0o600); err != nil {
		return err
	}
	before := s.sha256
	s.sha256, s.bytes = digest(data), len(data)
	return sc.st.Assert("sha256 of the rewritten CSV input", "differs from "+before, s.sha256, s.sha256 != before)
}

// latestAttemptSummary decodes the JSON audit summary FlowNet keeps in the error_message of a
// node's latest attempt into sum, asserting that the attempt exists and the field is JSON.
func latestAttemptSummary(ctx context.Context, fx *fixtureState, name string, sum any) error {
	sc := sceneOf(ctx)
	node, err := fx.node(name)
	if err != nil {
		return err
	}
	atts, err := attemptsOf(ctx, node.ID)
	if err != nil {
		return err
	}
	if err := sc.st.Assert("attempts of node "+name, ">= 1", len(atts), len(atts) >= 1); err != nil {
		return err
	}
	msg := atts[len(atts)-1].ErrorMessage
	jerr := json.Unmarshal([]byte(msg), sum)
	return sc.st.Assert("error_message of the latest attempt of "+name+" is a JSON summary", "JSON", firstLine(msg), jerr == nil)
}
