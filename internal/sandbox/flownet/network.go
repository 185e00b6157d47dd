package flownet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // scheduled_period timezones must resolve on hosts without a zoneinfo DB
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// Network is a loaded network definition (schema_version 1, product-contract §5).
type Network struct {
	// Path is the absolute path of the YAML file; Dir its directory (SQL paths are relative to it).
	Path, Dir string
	// Raw is the YAML as read; its SHA-256 is the Run's definition_sha256.
	Raw []byte

	SchemaVersion int
	NetworkID     string
	Description   string
	Policy        KeyPolicy
	MaxActiveRuns int
	LeaseSec      int
	HeartbeatSec  int
	Nodes         []Node
}

// KeyPolicy is business_key_policy.
type KeyPolicy struct {
	Type     string // explicit | scheduled_period
	Period   string // day | month
	Timezone string
	Format   string
}

// Node is one nodes[] entry.
type Node struct {
	ID, JobID, SQL string
	DependsOn      []string
	TriggerRule    string
	Idempotent     bool
	Inputs         map[string]string
	Outputs        map[string]string
}

// ValidationError is one line of "Network validation failed": `- [<Code>] <Path>: <Message>`.
// Path is a JSON-pointer-style location ("/nodes/1/depends_on/0"; "/" for the document),
// the instancePath form of the product's JSON-schema validator.
type ValidationError struct {
	Code, Path, Message string
}

func (e ValidationError) String() string {
	return fmt.Sprintf("- [%s] %s: %s", e.Code, e.Path, e.Message)
}

// DefinitionSHA256 is the hex SHA-256 of the YAML bytes.
func (n *Network) DefinitionSHA256() string {
	h := sha256.Sum256(n.Raw)
	return hex.EncodeToString(h[:])
}

// Node returns the node with id, or nil.
func (n *Network) Node(id string) *Node {
	for i := range n.Nodes {
		if n.Nodes[i].ID == id {
			return &n.Nodes[i]
		}
	}
	return nil
}

// LoadNetwork reads and validates a network YAML file, including that every nodes[].sql
// resolves to a readable regular file. All problems are returned, not just the first; a
// non-empty list means the definition must not be used.
func LoadNetwork(path string) (*Network, []ValidationError) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	raw, err := os.ReadFile(abs)
	if err != nil {
		return nil, []ValidationError{{"NETWORK_FILE_UNREADABLE", "/", fmt.Sprintf("cannot read %s: %v", path, err)}}
	}
	n, errs := ParseNetwork(raw, filepath.Dir(abs))
	if n != nil {
		n.Path = abs
	}
	if n != nil {
		errs = append(errs, checkSQLFiles(n)...)
	}
	return n, errs
}

// checkSQLFiles reports nodes whose SQL file does not resolve to a readable regular file.
func checkSQLFiles(n *Network) []ValidationError {
	var errs []ValidationError
	for i, nd := range n.Nodes {
		if nd.SQL == "" {
			continue
		}
		p := n.SQLPath(nd)
		fi, err := os.Stat(p)
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("not a regular file")
		}
		if err == nil {
			var f *os.File
			if f, err = os.Open(p); err == nil {
				f.Close()
			}
		}
		if err != nil {
			errs = append(errs, ValidationError{"SQL_FILE_UNREADABLE", fmt.Sprintf("/nodes/%d/sql", i), fmt.Sprintf("SQL file %s is not readable: %v", nd.SQL, err)})
		}
	}
	return errs
}

// SQLPath is the absolute path of a node's SQL file in the working copy.
func (n *Network) SQLPath(nd Node) string {
	if filepath.IsAbs(nd.SQL) {
		return filepath.Clean(nd.SQL)
	}
	return filepath.Join(n.Dir, filepath.FromSlash(nd.SQL))
}

// ParseNetwork validates YAML bytes (without touching SQL files). dir is recorded as the
// base of relative SQL paths. It returns the network (possibly partial) and every error.
func ParseNetwork(raw []byte, dir string) (*Network, []ValidationError) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		code := "YAML_PARSE_ERROR"
		if strings.Contains(err.Error(), "already defined") {
			code = "DUPLICATE_KEY"
		}
		return nil, []ValidationError{{code, "/", err.Error()}}
	}
	v := &validator{}
	n := &Network{Raw: raw, Dir: dir, MaxActiveRuns: 1}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, []ValidationError{{"SCHEMA_INVALID", "/", "the document is empty"}}
	}
	root := doc.Content[0]
	fields := v.object(root, "/", []string{"schema_version", "network_id", "business_key_policy", "network_lock", "nodes"},
		[]string{"description", "max_active_runs"})
	if fields == nil {
		return nil, v.errs
	}
	if sv := fields["schema_version"]; sv != nil {
		if i, ok := v.integer(sv, "/schema_version"); ok {
			n.SchemaVersion = i
			if i != 1 {
				v.add("SCHEMA_INVALID", "/schema_version", "schema_version must be 1")
			}
		}
	}
	if id := fields["network_id"]; id != nil {
		n.NetworkID, _ = v.identifier(id, "/network_id")
	}
	if d := fields["description"]; d != nil {
		n.Description, _ = v.str(d, "/description")
	}
	if m := fields["max_active_runs"]; m != nil {
		if i, ok := v.integer(m, "/max_active_runs"); ok {
			if i < 1 {
				v.add("SCHEMA_INVALID", "/max_active_runs", "max_active_runs must be an integer >= 1")
			} else {
				n.MaxActiveRuns = i
			}
		}
	}
	if p := fields["business_key_policy"]; p != nil {
		v.policy(p, n)
	}
	if l := fields["network_lock"]; l != nil {
		v.lock(l, n)
	}
	if ns := fields["nodes"]; ns != nil {
		v.nodes(ns, n)
	}
	return n, v.errs
}

type validator struct{ errs []ValidationError }

func (v *validator) add(code, path, format string, args ...any) {
	v.errs = append(v.errs, ValidationError{code, path, fmt.Sprintf(format, args...)})
}

func join(base, key string) string {
	if base == "/" {
		return "/" + key
	}
	return base + "/" + key
}

// object checks a mapping: required keys present, no unknown keys. It returns key → value.
func (v *validator) object(node *yaml.Node, path string, required, optional []string) map[string]*yaml.Node {
	if node.Kind != yaml.MappingNode {
		v.add("SCHEMA_INVALID", path, "must be an object")
		return nil
	}
	allowed := map[string]bool{}
	for _, k := range append(append([]string(nil), required...), optional...) {
		allowed[k] = true
	}
	out := map[string]*yaml.Node{}
	v.noDuplicateKeys(node, path)
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i].Value
		if !allowed[k] {
			v.add("UNKNOWN_PROPERTY", join(path, k), "unknown property %q", k)
			continue
		}
		out[k] = node.Content[i+1]
	}
	for _, k := range required {
		if out[k] == nil {
			v.add("SCHEMA_INVALID", path, "missing required property %q", k)
		}
	}
	return out
}

// noDuplicateKeys reports repeated mapping keys: decoding into a yaml.Node keeps both, and
// the product rejects them rather than letting the last one win.
func (v *validator) noDuplicateKeys(node *yaml.Node, path string) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i].Value
		if seen[k] {
			v.add("DUPLICATE_KEY", join(path, k), "key %q is defined more than once (line %d)", k, node.Content[i].Line)
		}
		seen[k] = true
	}
}

func (v *validator) str(node *yaml.Node, path string) (string, bool) {
	if node.Kind != yaml.ScalarNode || node.Tag != "!!str" {
		v.add("SCHEMA_INVALID", path, "must be a string")
		return "", false
	}
	return node.Value, true
}

func (v *validator) integer(node *yaml.Node, path string) (int, bool) {
	if node.Kind != yaml.ScalarNode || node.Tag != "!!int" {
		v.add("SCHEMA_INVALID", path, "must be an integer")
		return 0, false
	}
	i, err := strconv.Atoi(node.Value)
	if err != nil {
		v.add("SCHEMA_INVALID", path, "must be an integer")
		return 0, false
	}
	return i, true
}

func (v *validator) boolean(node *yaml.Node, path string) (bool, bool) {
	if node.Kind != yaml.ScalarNode || node.Tag != "!!bool" {
		v.add("SCHEMA_INVALID", path, "must be a boolean")
		return false, false
	}
	var b bool
	if err := node.Decode(&b); err != nil {
		v.add("SCHEMA_INVALID", path, "must be a boolean")
		return false, false
	}
	return b, true
}

// identifier checks the identifier rules (1–128 chars, no ':', no NUL, not __net__).
func (v *validator) identifier(node *yaml.Node, path string) (string, bool) {
	s, ok := v.str(node, path)
	if !ok {
		return "", false
	}
	if msg := identifierProblem(s); msg != "" {
		v.add("SCHEMA_INVALID", path, "%s", msg)
		return s, false
	}
	return s, true
}

func identifierProblem(s string) string {
	switch {
	case s == "":
		return "must be a non-empty identifier"
	case utf8.RuneCountInString(s) > maxIdentifierRunes:
		return "must be at most 128 characters"
	case strings.ContainsRune(s, 0):
		return "must not contain NUL"
	case strings.Contains(s, ":"):
		return "must not contain ':'"
	case s == reservedIdentifier:
		return "must not be the reserved identifier __net__"
	}
	return ""
}

var placeholderRE = regexp.MustCompile(`\{([^{}]*)\}`)

func (v *validator) policy(node *yaml.Node, n *Network) {
	const path = "/business_key_policy"
	if node.Kind != yaml.MappingNode {
		v.add("SCHEMA_INVALID", path, "must be an object")
		return
	}
	var typ string
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == "type" {
			typ, _ = v.str(node.Content[i+1], path+"/type")
		}
	}
	switch typ {
	case "explicit":
		v.object(node, path, []string{"type"}, nil)
		n.Policy = KeyPolicy{Type: typ}
	case "scheduled_period":
		f := v.object(node, path, []string{"type", "period", "timezone", "format"}, nil)
		n.Policy.Type = typ
		if f == nil {
			return
		}
		if p := f["period"]; p != nil {
			if s, ok := v.str(p, path+"/period"); ok {
				if s != "day" && s != "month" {
					v.add("SCHEMA_INVALID", path+"/period", "period must be day or month")
				}
				n.Policy.Period = s
			}
		}
		if tz := f["timezone"]; tz != nil {
			if s, ok := v.str(tz, path+"/timezone"); ok {
				if _, err := time.LoadLocation(s); err != nil || s == "" || s == "Local" {
					v.add("TIMEZONE_INVALID", path+"/timezone", "%q is not an IANA time zone", s)
				}
				n.Policy.Timezone = s
			}
		}
		if fm := f["format"]; fm != nil {
			if s, ok := v.str(fm, path+"/format"); ok {
				n.Policy.Format = s
				v.format(s, n.Policy.Period, path+"/format")
			}
		}
	case "":
		v.add("SCHEMA_INVALID", path, "missing required property \"type\"")
	default:
		v.add("SCHEMA_INVALID", path+"/type", "type must be explicit or scheduled_period")
	}
}

func (v *validator) format(s, period, path string) {
	seen := map[string]bool{}
	for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
		switch m[1] {
		case "network_id", "yyyy", "MM", "dd":
			seen[m[1]] = true
		default:
			v.add("FORMAT_PLACEHOLDER_UNSUPPORTED", path, "placeholder {%s} is not supported", m[1])
		}
	}
	if rest := placeholderRE.ReplaceAllString(s, ""); strings.ContainsAny(rest, "{}") {
		v.add("FORMAT_PLACEHOLDER_INVALID", path, "unbalanced braces in %q", s)
	}
	switch period {
	case "day":
		if !seen["yyyy"] || !seen["MM"] || !seen["dd"] {
			v.add("FORMAT_PERIOD_MISMATCH", path, "period day requires {yyyy}, {MM} and {dd}")
		}
	case "month":
		if !seen["yyyy"] || !seen["MM"] || seen["dd"] {
			v.add("FORMAT_PERIOD_MISMATCH", path, "period month requires {yyyy} and {MM} and forbids {dd}")
		}
	}
}

func (v *validator) lock(node *yaml.Node, n *Network) {
	const path = "/network_lock"
	f := v.object(node, path, []string{"lease_duration_sec", "heartbeat_interval_sec"}, nil)
	if f == nil {
		return
	}
	lease, lok := 0, false
	hb, hok := 0, false
	if x := f["lease_duration_sec"]; x != nil {
		if lease, lok = v.integer(x, path+"/lease_duration_sec"); lok && lease < 1 {
			v.add("SCHEMA_INVALID", path+"/lease_duration_sec", "must be an integer >= 1")
			lok = false
		}
	}
	if x := f["heartbeat_interval_sec"]; x != nil {
		if hb, hok = v.integer(x, path+"/heartbeat_interval_sec"); hok && hb < 1 {
			v.add("SCHEMA_INVALID", path+"/heartbeat_interval_sec", "must be an integer >= 1")
			hok = false
		}
	}
	n.LeaseSec, n.HeartbeatSec = lease, hb
	if lok && hok {
		if hb >= lease {
			v.add("NETWORK_LOCK_HEARTBEAT_NOT_LESS_THAN_LEASE", path+"/heartbeat_interval_sec", "heartbeat_interval_sec (%d) must be less than lease_duration_sec (%d)", hb, lease)
		} else if hb*3 > lease {
			v.add("NETWORK_LOCK_HEARTBEAT_EXCEEDS_ONE_THIRD", path+"/heartbeat_interval_sec", "heartbeat_interval_sec (%d) must be at most one third of lease_duration_sec (%d)", hb, lease)
		}
	}
}

func (v *validator) nodes(node *yaml.Node, n *Network) {
	const path = "/nodes"
	if node.Kind != yaml.SequenceNode {
		v.add("SCHEMA_INVALID", path, "must be an array")
		return
	}
	if len(node.Content) == 0 {
		v.add("SCHEMA_INVALID", path, "must contain at least one node")
		return
	}
	seen := map[string]int{}
	for i, item := range node.Content {
		p := fmt.Sprintf("%s/%d", path, i)
		nd := v.node(item, p)
		if nd.ID != "" {
			if prev, dup := seen[nd.ID]; dup {
				v.add("DUPLICATE_NODE_ID", p+"/id", "node id %q is already used by /nodes/%d", nd.ID, prev)
			} else {
				seen[nd.ID] = i
			}
		}
		n.Nodes = append(n.Nodes, nd)
	}
	for i, nd := range n.Nodes {
		for j, d := range nd.DependsOn {
			dp := fmt.Sprintf("%s/%d/depends_on/%d", path, i, j)
			if d == nd.ID {
				v.add("SELF_DEPENDENCY", dp, "node %q depends on itself", nd.ID)
			} else if _, ok := seen[d]; !ok {
				v.add("UNKNOWN_DEPENDENCY", dp, "node %q depends on unknown node %q", nd.ID, d)
			}
		}
	}
	if len(v.errs) == 0 {
		if _, cyc := TopoOrder(n.Nodes); len(cyc) > 0 {
			v.add("CYCLE_DETECTED", path, "dependency cycle among nodes: %s", strings.Join(cyc, ", "))
		}
	}
}

// node reads one entry of /nodes at path p; a field that fails its check is left empty.
func (v *validator) node(item *yaml.Node, p string) Node {
	f := v.object(item, p, []string{"id", "job_id", "sql", "idempotent"}, []string{"depends_on", "trigger_rule", "inputs", "outputs"})
	nd := Node{TriggerRule: "all_success"}
	if f == nil {
		return nd
	}
	if x := f["id"]; x != nil {
		nd.ID, _ = v.identifier(x, p+"/id")
	}
	if x := f["job_id"]; x != nil {
		nd.JobID, _ = v.identifier(x, p+"/job_id")
	}
	if x := f["sql"]; x != nil {
		if s, ok := v.str(x, p+"/sql"); ok {
			if strings.TrimSpace(s) == "" {
				v.add("SCHEMA_INVALID", p+"/sql", "must be a non-empty path")
			} else {
				nd.SQL = s
			}
		}
	}
	if x := f["idempotent"]; x != nil {
		nd.Idempotent, _ = v.boolean(x, p+"/idempotent")
	}
	if x := f["trigger_rule"]; x != nil {
		if s, ok := v.str(x, p+"/trigger_rule"); ok {
			if s != "all_success" {
				v.add("TRIGGER_RULE_UNSUPPORTED", p+"/trigger_rule", "trigger_rule %q is not supported (only all_success)", s)
			}
			nd.TriggerRule = s
		}
	}
	if x := f["depends_on"]; x != nil {
		nd.DependsOn = v.dependsOn(x, p)
	}
	nd.Inputs = v.stringMap(f["inputs"], p+"/inputs")
	nd.Outputs = v.stringMap(f["outputs"], p+"/outputs")
	return nd
}

// dependsOn reads a node's depends_on: identifiers, each listed once.
func (v *validator) dependsOn(x *yaml.Node, p string) []string {
	if x.Kind != yaml.SequenceNode {
		v.add("SCHEMA_INVALID", p+"/depends_on", "must be an array")
		return nil
	}
	var out []string
	dup := map[string]bool{}
	for j, d := range x.Content {
		dp := fmt.Sprintf("%s/depends_on/%d", p, j)
		s, ok := v.identifier(d, dp)
		if !ok {
			continue
		}
		if dup[s] {
			v.add("DUPLICATE_DEPENDENCY", dp, "dependency %q is listed more than once", s)
			continue
		}
		dup[s] = true
		out = append(out, s)
	}
	return out
}

func (v *validator) stringMap(node *yaml.Node, path string) map[string]string {
	if node == nil {
		return nil
	}
	if node.Kind != yaml.MappingNode {
		v.add("SCHEMA_INVALID", path, "must be an object of names to file name templates")
		return nil
	}
	out := map[string]string{}
	v.noDuplicateKeys(node, path)
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i].Value
		if s, ok := v.str(node.Content[i+1], join(path, k)); ok {
			out[k] = s
		}
	}
	return out
}

// scanOrder is the order TopoOrder looks for the next ready node in: definition order.
func scanOrder(nodes []Node) []Node {
	if !defect.TopoOrderLastReadyFirst {
		return nodes
	}
	out := make([]Node, len(nodes))
	for i, nd := range nodes {
		out[len(nodes)-1-i] = nd
	}
	return out
}

// TopoOrder returns the nodes' ids in stable topological order: at each step the first node
// in definition order whose dependencies are all placed. When a cycle prevents completion,
// the ids that could not be placed are returned (sorted) as the second value.
func TopoOrder(nodes []Node) (order []string, cycle []string) {
	placed := map[string]bool{}
	known := map[string]bool{}
	for _, nd := range nodes {
		known[nd.ID] = true
	}
	for len(order) < len(nodes) {
		progressed := false
		for _, nd := range scanOrder(nodes) {
			if placed[nd.ID] {
				continue
			}
			ready := true
			for _, d := range nd.DependsOn {
				if known[d] && !placed[d] {
					ready = false
					break
				}
			}
			if ready {
				placed[nd.ID] = true
				order = append(order, nd.ID)
				progressed = true
				break // restart so the earliest ready node in definition order always wins
			}
		}
		if !progressed {
			for _, nd := range nodes {
				if !placed[nd.ID] {
					cycle = append(cycle, nd.ID)
				}
			}
			sort.Strings(cycle)
			return order, cycle
		}
	}
	return order, nil
}

// Descendants returns id and every node that transitively depends on it.
func (n *Network) Descendants(id string) map[string]bool {
	out := map[string]bool{id: true}
	for changed := true; changed; {
		changed = false
		for _, nd := range n.Nodes {
			if out[nd.ID] {
				continue
			}
			for _, d := range nd.DependsOn {
				if out[d] {
					out[nd.ID] = true
					changed = true
					break
				}
			}
		}
	}
	return out
}
