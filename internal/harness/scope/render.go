package scope

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/base/yamlerr"
)

// RenderOptions adjusts one rendering.
type RenderOptions struct {
	// SwapSQL replaces a node's SQL file: fixture node id -> SQL path
	// (absolute, or relative to the source YAML's directory). m5-kill-unknown
	// swaps n1_customers for job-longread.sql. The replacement's
	// `-- @ksql name:` must equal the node's fixture job_id, as for any node.
	SwapSQL map[string]string
	// NetworkIDSuffix is appended to the fixture's network_id before it is
	// scoped, so one fixture can be rendered twice in a scenario as two
	// networks with their own locks (m6-06's "_local" and "_cloud" drills).
	NetworkIDSuffix string
	// SQLReplace replaces literal placeholder tokens in every copied SQL file
	// (e.g. "__CSV1_ENCODING__" -> "UTF8"), after the header rewrite.
	SQLReplace map[string]string
	// SQLFolder, when set, is the folder every SQL file of a node (its sql: path or a swap)
	// must resolve inside, symlinks followed (features/fixtures/jobs for the steps and the
	// preflight): a fixture cannot make a run read a file from elsewhere.
	SQLFolder string
}

// Rendered describes a network rendered into a scenario's work dir.
type Rendered struct {
	Path             string            // absolute path of the rendered network YAML
	NetworkID        string            // rendered network_id
	FixtureNetworkID string            // network_id as written in the fixture
	Nodes            []RenderedNode    // in YAML order
	NodeIDs          map[string]string // fixture node id -> rendered node id
	JobIDs           map[string]string // fixture node id -> rendered job id
	Files            []string          // absolute paths written (YAML and SQL), sorted
}

// RenderedNode is one node of a rendered network.
type RenderedNode struct {
	FixtureID    string // node id in the fixture ("n1_customers")
	ID           string // rendered node id
	FixtureJobID string // job_id in the fixture ("m5_shared_read")
	JobID        string // rendered job id
	SQL          string // absolute path of the rendered SQL file
}

// Render writes a scoped copy of a fixture network (schema_version 1) and the
// SQL files its nodes reference into dstDir, and returns what it wrote.
//
//   - network_id becomes NetworkID(network_id); every nodes[].id and every
//     depends_on entry becomes NodeID(…) (unknown dependencies are renamed
//     too, so FlowNet's own validation reports them as it would have);
//     every nodes[].job_id becomes JobID(…).
//   - Everything else — unknown keys, comments, key order, lock settings,
//     business_key_policy (its {network_id} placeholder expands to the
//     rendered id at run time) — is kept, by editing the yaml.v3 node tree.
//   - The layout under the common parent of the YAML and all SQL files is
//     mirrored into dstDir, so a relative `sql: ../jobs/x.sql` still resolves
//     and stays as written. Only a swapped or absolute sql path is rewritten
//     (to the copy's path relative to the rendered YAML).
//   - In each SQL file the `-- @ksql name:` header (the leading comment
//     block, as kSQL-Flow reads it) is rewritten to the scoped job id, because
//     FlowNet requires job_id to equal it (JOB_ID_MISMATCH otherwise). A
//     `-- @ksql depends_on:` header lists job names and is rewritten the same
//     way. A file without a name header, or whose name differs from the job_id
//     of a node using it, is refused: it is a fixture bug that would otherwise
//     surface later as a confusing product error.
//
// Duplicate keys in the network or a node mapping are refused (FlowNet rejects
// them too, and a rename of only one of the copies would be misleading).
// Render refuses to write over any of its source files.
func (s *Scope) Render(srcNetworkYAML, dstDir string, opts RenderOptions) (Rendered, error) {
	src, err := filepath.Abs(srcNetworkYAML)
	if err != nil {
		return Rendered{}, fmt.Errorf("render %s: %w", srcNetworkYAML, err)
	}
	dst, err := filepath.Abs(dstDir)
	if err != nil {
		return Rendered{}, fmt.Errorf("render %s: destination %s: %w", srcNetworkYAML, dstDir, err)
	}
	out, err := s.render(src, dst, opts)
	if err != nil {
		// Every error names the fixture, and the line when one is known:
		// "render features/fixtures/networks/x.yaml:7: node "n1": missing job_id".
		// Only a *lineError returned as such carries a line; the parts never
		// wrap one, so a type assertion is enough.
		line, msg := 0, err.Error()
		if le, ok := err.(*lineError); ok {
			line, msg = le.line, le.msg
		}
		return Rendered{}, fmt.Errorf("render %s: %s", yamlerr.Where(srcNetworkYAML, line), msg)
	}
	return out, nil
}

// render does Render's work on absolute paths; its errors are worded without
// the fixture's name, which Render adds.
func (s *Scope) render(src, dst string, opts RenderOptions) (Rendered, error) {
	var out Rendered
	raw, err := os.ReadFile(src)
	if err != nil {
		return out, err
	}
	doc, nodesSeq, netNode, err := parseNetwork(raw)
	if err != nil {
		return out, err
	}
	out.FixtureNetworkID = netNode.Value
	out.NetworkID = s.NetworkID(netNode.Value + opts.NetworkIDSuffix)

	// Pass 1: read every node, so depends_on can be renamed whatever the order.
	yamlDir := filepath.Dir(src)
	infos, err := readNodes(nodesSeq, yamlDir, opts)
	if err != nil {
		return out, err
	}
	jobOfFile, sqlLine, err := jobsOfSQLFiles(infos)
	if err != nil {
		return out, err
	}

	// Mirror the layout under the common parent of the YAML and the SQL files.
	base := yamlDir
	for f := range jobOfFile {
		base = commonDir(base, filepath.Dir(f))
	}
	mirror := func(p string) (string, error) {
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return "", err
		}
		d := filepath.Join(dst, rel)
		if d == p {
			return "", fmt.Errorf("refusing to overwrite the fixture %s (destination is the source)", p)
		}
		return d, nil
	}
	dstYAML, err := mirror(src)
	if err != nil {
		return out, err
	}
	out.Path = dstYAML

	dstOf, written, err := s.renderSQLFiles(jobOfFile, sqlLine, mirror, opts.SQLReplace)
	if err != nil {
		return out, err
	}

	// Pass 2: rename in the YAML tree.
	setStr(netNode, out.NetworkID)
	if err := s.renameNodes(&out, infos, dstYAML, dstOf); err != nil {
		return out, err
	}

	if err := writeYAML(dstYAML, doc); err != nil {
		return out, err
	}
	written = append(written, dstYAML)
	sort.Strings(written)
	out.Files = written
	return out, nil
}

// parseNetwork reads the network fixture's document and checks its top level:
// one mapping without duplicate keys, schema_version 1, a network_id and a
// non-empty nodes list.
func parseNetwork(raw []byte) (doc, nodesSeq, netNode *yaml.Node, err error) {
	doc, line, problem := yamlerr.OneMapping(raw, yamlerr.Wording{
		Empty:          "empty file: expected one YAML document holding a mapping",
		Syntax:         "parse YAML: %s",
		SecondDocument: "a second YAML document: a network fixture is one document",
		NotMapping:     "expected one YAML document holding a mapping",
	})
	if problem != "" {
		return nil, nil, nil, &lineError{line, problem}
	}
	root := doc.Content[0]
	if err := checkDuplicateKeys(root, "network"); err != nil {
		return nil, nil, nil, err
	}
	if v := mapValue(root, "schema_version"); v == nil || v.Kind != yaml.ScalarNode || v.Value != "1" {
		line := root.Line
		if v != nil {
			line = v.Line
		}
		return nil, nil, nil, &lineError{line, "schema_version must be 1 (the only schema flowtest knows how to rename)"}
	}
	netNode, err = scalar(root, "network_id", "network")
	if err != nil {
		return nil, nil, nil, err
	}
	nodesSeq = mapValue(root, "nodes")
	if nodesSeq == nil || nodesSeq.Kind != yaml.SequenceNode || len(nodesSeq.Content) == 0 {
		line := root.Line
		if nodesSeq != nil {
			line = nodesSeq.Line
		}
		return nil, nil, nil, &lineError{line, "nodes must be a non-empty list"}
	}
	return doc, nodesSeq, netNode, nil
}

// nodeInfo is one node of the fixture as read in pass 1.
type nodeInfo struct {
	m                   *yaml.Node
	id, job, sqlRaw     *yaml.Node
	srcSQL              string
	swapped, absoluteIn bool
}

// readNodes reads every node of the list: its id (unique), job_id and the SQL
// file it runs (after opts.SwapSQL, inside opts.SQLFolder when set).
func readNodes(nodesSeq *yaml.Node, yamlDir string, opts RenderOptions) ([]nodeInfo, error) {
	infos := make([]nodeInfo, 0, len(nodesSeq.Content))
	seenIDs := map[string]bool{}
	for i, m := range nodesSeq.Content {
		where := fmt.Sprintf("nodes[%d]", i)
		if m.Kind != yaml.MappingNode {
			return nil, &lineError{m.Line, fmt.Sprintf("%s is not a mapping", where)}
		}
		if err := checkDuplicateKeys(m, where); err != nil {
			return nil, err
		}
		id, err := scalar(m, "id", where)
		if err != nil {
			return nil, err
		}
		where = fmt.Sprintf("node %q", id.Value)
		if seenIDs[id.Value] {
			return nil, &lineError{id.Line, fmt.Sprintf("duplicate node id %q", id.Value)}
		}
		seenIDs[id.Value] = true
		job, err := scalar(m, "job_id", where)
		if err != nil {
			return nil, err
		}
		sqlRaw, err := scalar(m, "sql", where)
		if err != nil {
			return nil, err
		}
		ni := nodeInfo{m: m, id: id, job: job, sqlRaw: sqlRaw}
		if swap, ok := opts.SwapSQL[id.Value]; ok {
			ni.swapped = true
			ni.srcSQL = resolve(yamlDir, swap)
		} else {
			ni.absoluteIn = filepath.IsAbs(filepath.FromSlash(sqlRaw.Value))
			ni.srcSQL = resolve(yamlDir, sqlRaw.Value)
		}
		if opts.SQLFolder != "" {
			if _, _, err := within(opts.SQLFolder, ni.srcSQL); err != nil {
				return nil, &lineError{sqlRaw.Line, fmt.Sprintf("node %q: sql %s %v", id.Value, ni.srcSQL, err)}
			}
		}
		infos = append(infos, ni)
	}
	for nodeID := range opts.SwapSQL {
		if !seenIDs[nodeID] {
			return nil, fmt.Errorf("SwapSQL names node %q, which the network does not have", nodeID)
		}
	}
	return infos, nil
}

// jobsOfSQLFiles maps each SQL file to the job name its header has to carry:
// every file is rendered once, so all nodes using it must agree on that name.
// sqlLine is the line of the first node's sql: naming each file.
func jobsOfSQLFiles(infos []nodeInfo) (jobOfFile map[string]string, sqlLine map[string]int, err error) {
	jobOfFile = map[string]string{}
	sqlLine = map[string]int{}
	for _, ni := range infos {
		if prev, ok := jobOfFile[ni.srcSQL]; ok && prev != ni.job.Value {
			return nil, nil, &lineError{ni.job.Line, fmt.Sprintf("%s is used by nodes with different job_ids (%q, %q); its single name header cannot match both", ni.srcSQL, prev, ni.job.Value)}
		}
		if _, ok := jobOfFile[ni.srcSQL]; !ok {
			sqlLine[ni.srcSQL] = ni.sqlRaw.Line
		}
		jobOfFile[ni.srcSQL] = ni.job.Value
	}
	return jobOfFile, sqlLine, nil
}

// renderSQLFiles renders every SQL file to its mirrored path, sorted for a
// deterministic write order, and returns source -> rendered path and the
// paths written.
func (s *Scope) renderSQLFiles(jobOfFile map[string]string, sqlLine map[string]int, mirror func(string) (string, error), replace map[string]string) (dstOf map[string]string, written []string, err error) {
	files := make([]string, 0, len(jobOfFile))
	for f := range jobOfFile {
		files = append(files, f)
	}
	sort.Strings(files)
	dstOf = map[string]string{}
	for _, f := range files {
		d, err := mirror(f)
		if err != nil {
			return nil, nil, err
		}
		if _, err := s.RenderSQL(f, d, jobOfFile[f], replace); err != nil {
			return nil, nil, &lineError{sqlLine[f], err.Error()}
		}
		dstOf[f] = d
		written = append(written, d)
	}
	return dstOf, written, nil
}

// renameNodes scopes every node's id, job_id and depends_on entries in the
// YAML tree, points a swapped or absolute sql: at its rendered copy, and
// records the names in out.
func (s *Scope) renameNodes(out *Rendered, infos []nodeInfo, dstYAML string, dstOf map[string]string) error {
	out.NodeIDs = map[string]string{}
	out.JobIDs = map[string]string{}
	for _, ni := range infos {
		fixtureID, fixtureJob := ni.id.Value, ni.job.Value
		jobID, err := s.JobID(fixtureJob)
		if err != nil {
			return &lineError{ni.job.Line, fmt.Sprintf("node %q: %v", fixtureID, err)}
		}
		nodeID := s.NodeID(fixtureID)
		setStr(ni.id, nodeID)
		setStr(ni.job, jobID)
		if ni.swapped || ni.absoluteIn {
			rel, err := filepath.Rel(filepath.Dir(dstYAML), dstOf[ni.srcSQL])
			if err != nil {
				return fmt.Errorf("node %q: %v", fixtureID, err)
			}
			setStr(ni.sqlRaw, filepath.ToSlash(rel))
		}
		if deps := mapValue(ni.m, "depends_on"); deps != nil {
			if deps.Kind != yaml.SequenceNode {
				return &lineError{deps.Line, fmt.Sprintf("node %q: depends_on must be a list", fixtureID)}
			}
			for _, d := range deps.Content {
				if d.Kind != yaml.ScalarNode {
					return &lineError{d.Line, fmt.Sprintf("node %q: depends_on entries must be node ids", fixtureID)}
				}
				setStr(d, s.NodeID(d.Value))
			}
		}
		out.NodeIDs[fixtureID] = nodeID
		out.JobIDs[fixtureID] = jobID
		out.Nodes = append(out.Nodes, RenderedNode{
			FixtureID: fixtureID, ID: nodeID, FixtureJobID: fixtureJob, JobID: jobID, SQL: dstOf[ni.srcSQL],
		})
	}
	return nil
}

// writeYAML encodes the edited tree with a two-space indent and writes it.
func writeYAML(path string, doc *yaml.Node) error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encode YAML: %v", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("encode YAML: %v", err)
	}
	return writeFile(path, buf.Bytes())
}

// RenderSQL copies one SQL job file to dstPath with its `-- @ksql name:` (and
// `-- @ksql depends_on:`) header rewritten through JobID and the SQLReplace
// placeholders applied, and returns the scoped job id. expectJob, when not
// empty, is the fixture job id the header must name. m5-lock-conflict uses it
// directly for the standalone holder that runs job-longread.sql outside any
// network (`--expected-job-id` = the returned id).
func (s *Scope) RenderSQL(srcPath, dstPath, expectJob string, replace map[string]string) (string, error) {
	raw, err := os.ReadFile(srcPath)
	if err != nil {
		return "", fmt.Errorf("sql %s: %w", srcPath, err)
	}
	text, name, err := s.rewriteHeader(string(raw))
	if err != nil {
		var le *lineError
		if errors.As(err, &le) {
			return "", fmt.Errorf("sql %s:%d: %s", srcPath, le.line, le.msg)
		}
		return "", fmt.Errorf("sql %s: %w", srcPath, err)
	}
	if name == "" {
		return "", fmt.Errorf("sql %s: no `-- @ksql name:` header; flowtest must rewrite it to the scoped job id", srcPath)
	}
	if expectJob != "" && name != expectJob {
		return "", fmt.Errorf("sql %s: header names job %q but the node's job_id is %q (FlowNet would fail with JOB_ID_MISMATCH)", srcPath, name, expectJob)
	}
	// Placeholders in a stable order, so overlapping tokens behave the same
	// on every run.
	keys := make([]string, 0, len(replace))
	for k := range replace {
		if k != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		text = strings.ReplaceAll(text, k, replace[k])
	}
	if abs, err := filepath.Abs(srcPath); err == nil {
		if d, err := filepath.Abs(dstPath); err == nil && d == abs {
			return "", fmt.Errorf("sql %s: refusing to overwrite the fixture (destination is the source)", srcPath)
		}
	}
	if err := writeFile(dstPath, []byte(text)); err != nil {
		return "", err
	}
	jobID, err := s.JobID(name)
	if err != nil {
		return "", fmt.Errorf("sql %s: %w", srcPath, err)
	}
	return jobID, nil
}

// rewriteHeader rewrites the header block the way kSQL-Flow reads it: leading
// blank and "--" lines, up to the first other line; `-- @ksql <key>: <value>`
// lines inside it. It returns the rewritten text and the fixture job name.
func (s *Scope) rewriteHeader(text string) (string, string, error) {
	lines := strings.SplitAfter(text, "\n")
	name := ""
	for i, line := range lines {
		content := strings.TrimRight(line, "\r\n")
		eol := line[len(content):]
		t := strings.TrimSpace(strings.TrimPrefix(content, "\ufeff"))
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "--") {
			break
		}
		body := strings.TrimSpace(strings.TrimPrefix(t, "--"))
		if !strings.HasPrefix(body, "@ksql") {
			continue
		}
		key, val, ok := strings.Cut(strings.TrimPrefix(body, "@ksql"), ":")
		if !ok {
			continue // malformed header line: left for kSQL-Flow to report
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		colon := strings.Index(content, "@ksql")
		colon += strings.Index(content[colon:], ":")
		switch key {
		case "name":
			if name != "" {
				return "", "", &lineError{i + 1, "a second `-- @ksql name:` header"}
			}
			if val == "" {
				return "", "", &lineError{i + 1, "empty `-- @ksql name:` header"}
			}
			id, err := s.JobID(val)
			if err != nil {
				return "", "", &lineError{i + 1, err.Error()}
			}
			name = val
			lines[i] = content[:colon+1] + " " + id + eol
		case "depends_on", "dependsOn":
			var ids []string
			for _, d := range strings.Split(val, ",") {
				if d = strings.TrimSpace(d); d == "" {
					continue
				}
				id, err := s.JobID(d)
				if err != nil {
					return "", "", &lineError{i + 1, "depends_on: " + err.Error()}
				}
				ids = append(ids, id)
			}
			if len(ids) > 0 {
				lines[i] = content[:colon+1] + " " + strings.Join(ids, ", ") + eol
			}
		}
	}
	return strings.Join(lines, ""), name, nil
}

// ---- helpers ----

func resolve(dir, p string) string {
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// commonDir returns the deepest directory containing both a and b (both
// absolute and clean).
func commonDir(a, b string) string {
	for {
		rel, err := filepath.Rel(a, b)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return a
		}
		parent := filepath.Dir(a)
		if parent == a {
			return a // filesystem root (or another volume on Windows)
		}
		a = parent
	}
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(m *yaml.Node, key, where string) (*yaml.Node, error) {
	v := mapValue(m, key)
	if v == nil {
		return nil, &lineError{m.Line, fmt.Sprintf("%s: missing %s", where, key)}
	}
	if v.Kind != yaml.ScalarNode || v.Value == "" {
		return nil, &lineError{v.Line, fmt.Sprintf("%s: %s must be a non-empty string", where, key)}
	}
	return v, nil
}

func checkDuplicateKeys(m *yaml.Node, where string) error {
	seen := map[string]int{}
	for i := 0; i < len(m.Content); i += 2 {
		k := m.Content[i].Value
		if first, dup := seen[k]; dup {
			return &lineError{m.Content[i].Line, fmt.Sprintf("%s: duplicate key %q (first at line %d)", where, k, first)}
		}
		seen[k] = m.Content[i].Line
	}
	return nil
}

// lineError is a validation error at a line of the file being read.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// setStr replaces a scalar's value and marks it a string, so the encoder
// quotes it if it would otherwise read as another type.
func setStr(n *yaml.Node, v string) {
	n.Value = v
	n.Tag = "!!str"
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		n.Style = 0
	}
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
