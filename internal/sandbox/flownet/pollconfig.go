package flownet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// poll-requests configuration (product-contract §1.10): the environment and the allow-list
// YAML. Every problem is a coded error; the codes are the product's config error codes.
const (
	codeAllowlistPathNotAbsolute  = "ALLOWLIST_PATH_NOT_ABSOLUTE"
	codeAllowlistUnreadable       = "ALLOWLIST_UNREADABLE"
	codeAllowlistParseError       = "ALLOWLIST_PARSE_ERROR"
	codeConfigShapeInvalid        = "CONFIG_SHAPE_INVALID"
	codeNetworkEntryInvalid       = "NETWORK_ENTRY_INVALID"
	codeDuplicateNetwork          = "DUPLICATE_NETWORK"
	codeDefinitionPathNotAbsolute = "DEFINITION_PATH_NOT_ABSOLUTE"
	codeNetworkDefinitionInvalid  = "NETWORK_DEFINITION_INVALID"
	codeNetworkIDMismatch         = "NETWORK_ID_MISMATCH"
	codeThresholdInvalid          = "THRESHOLD_INVALID"
)

// Poller timing defaults (§3.8).
const (
	defaultClaimHeartbeat = 60 * time.Second
	defaultStaleAfter     = 15 * time.Minute
)

// allowEntry is one networks[] entry of the allow-list, with its definition loaded.
type allowEntry struct {
	NetworkID      string
	DefinitionPath string
	AppStart       bool
	Net            *Network
}

// pollConfig is everything poll-requests needs before it reads the request app.
type pollConfig struct {
	profile, baseURL, appID, token string
	allowlistPath                  string
	heartbeat, staleAfter          time.Duration
	host                           string
	networks                       []allowEntry
}

// entry returns the allow-list entry of a network id (nil when not allow-listed).
func (pc *pollConfig) entry(networkID string) *allowEntry {
	for i := range pc.networks {
		if pc.networks[i].NetworkID == networkID {
			return &pc.networks[i]
		}
	}
	return nil
}

// loadPollConfig reads the environment and the allow-list, and loads every definition it
// names. It reads nothing remote.
func (c *cli) loadPollConfig() (*pollConfig, error) {
	env, err := c.requireEnv("KSQL_FLOWNET_BASE_URL", "KSQL_FLOWNET_REQUEST_APP_ID", "KSQL_FLOWNET_REQUEST_API_TOKEN",
		"KSQL_FLOWNET_REQUEST_ALLOWLIST_PATH", "KSQL_FLOWNET_PROFILE")
	if err != nil {
		return nil, err
	}
	pc := &pollConfig{profile: env["KSQL_FLOWNET_PROFILE"], baseURL: env["KSQL_FLOWNET_BASE_URL"],
		appID: env["KSQL_FLOWNET_REQUEST_APP_ID"], token: env["KSQL_FLOWNET_REQUEST_API_TOKEN"],
		allowlistPath: env["KSQL_FLOWNET_REQUEST_ALLOWLIST_PATH"], host: c.host()}
	if pc.heartbeat, err = c.durationMS("KSQL_FLOWNET_REQUEST_HEARTBEAT_INTERVAL_MS", defaultClaimHeartbeat); err != nil {
		return nil, err
	}
	if pc.staleAfter, err = c.durationMS("KSQL_FLOWNET_REQUEST_STALE_AFTER_MS", defaultStaleAfter); err != nil {
		return nil, err
	}
	if pc.staleAfter <= pc.heartbeat {
		return nil, coded(codeThresholdInvalid, "KSQL_FLOWNET_REQUEST_STALE_AFTER_MS (%d) must exceed KSQL_FLOWNET_REQUEST_HEARTBEAT_INTERVAL_MS (%d)",
			pc.staleAfter.Milliseconds(), pc.heartbeat.Milliseconds())
	}
	if pc.networks, err = loadAllowlist(pc.allowlistPath); err != nil {
		return nil, err
	}
	return pc, nil
}

// durationMS reads an optional positive integer millisecond setting.
func (c *cli) durationMS(name string, def time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(c.getenv(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, coded(codeThresholdInvalid, "%s must be a positive integer of milliseconds, got %q", name, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// loadAllowlist parses the allow-list YAML: a mapping with only a non-empty `networks` list
// whose entries carry only network_id, definition_path (absolute) and app_start (boolean,
// omitted = false). Duplicate keys, duplicate network ids, definitions that do not validate
// and definitions whose network_id differs are refused.
func loadAllowlist(path string) ([]allowEntry, error) {
	if !filepath.IsAbs(path) {
		return nil, coded(codeAllowlistPathNotAbsolute, "KSQL_FLOWNET_REQUEST_ALLOWLIST_PATH must be an absolute path, got %q", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, coded(codeAllowlistUnreadable, "cannot read the allow-list %s: %v", path, err)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&doc); err != nil {
		return nil, coded(codeAllowlistParseError, "allow-list %s is not YAML: %v", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, coded(codeConfigShapeInvalid, "allow-list %s must hold one mapping", path)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, coded(codeConfigShapeInvalid, "allow-list %s: the root must be a mapping with only `networks`", path)
	}
	if err := duplicateKey(root, "the root"); err != nil {
		return nil, err
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; k != "networks" {
			return nil, coded(codeConfigShapeInvalid, "allow-list: unknown root key %q (only `networks` is allowed)", k)
		}
		list = root.Content[i+1]
	}
	if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return nil, coded(codeConfigShapeInvalid, "allow-list: `networks` must be a non-empty list")
	}
	var out []allowEntry
	seen := map[string]bool{}
	for i, item := range list.Content {
		e, err := allowlistEntry(i, item)
		if err != nil {
			return nil, err
		}
		if seen[e.NetworkID] {
			return nil, coded(codeDuplicateNetwork, "allow-list: network %s is listed more than once", e.NetworkID)
		}
		seen[e.NetworkID] = true
		out = append(out, e)
	}
	return out, nil
}

func allowlistEntry(i int, item *yaml.Node) (allowEntry, error) {
	var e allowEntry
	where := fmt.Sprintf("networks[%d]", i)
	if item.Kind != yaml.MappingNode {
		return e, coded(codeNetworkEntryInvalid, "allow-list %s must be a mapping", where)
	}
	if err := duplicateKey(item, where); err != nil {
		return e, err
	}
	has := map[string]bool{}
	for j := 0; j+1 < len(item.Content); j += 2 {
		k, v := item.Content[j].Value, item.Content[j+1]
		has[k] = true
		switch k {
		case "network_id", "definition_path":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || strings.TrimSpace(v.Value) == "" {
				return e, coded(codeNetworkEntryInvalid, "allow-list %s: %s must be a non-empty string", where, k)
			}
			if k == "network_id" {
				e.NetworkID = v.Value
			} else {
				e.DefinitionPath = v.Value
			}
		case "app_start":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
				return e, coded(codeNetworkEntryInvalid, "allow-list %s: app_start must be a boolean", where)
			}
			e.AppStart = v.Value == "true"
		default:
			return e, coded(codeNetworkEntryInvalid, "allow-list %s: unknown key %q (network_id, definition_path, app_start)", where, k)
		}
	}
	var missing []string
	for _, k := range []string{"network_id", "definition_path"} {
		if !has[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return e, coded(codeNetworkEntryInvalid, "allow-list %s: missing %s", where, strings.Join(missing, ", "))
	}
	if !filepath.IsAbs(e.DefinitionPath) {
		return e, coded(codeDefinitionPathNotAbsolute, "allow-list %s: definition_path must be absolute, got %q", where, e.DefinitionPath)
	}
	n, err := loadAllowedDefinition(e)
	if err != nil {
		return e, err
	}
	e.Net = n
	return e, nil
}

// loadAllowedDefinition validates the definition an entry names (SQL files included) and
// requires its network_id to be the entry's. START re-reads it before spawning.
func loadAllowedDefinition(e allowEntry) (*Network, error) {
	n, verrs := LoadNetwork(e.DefinitionPath)
	if len(verrs) > 0 {
		lines := make([]string, len(verrs))
		for i, v := range verrs {
			lines[i] = v.String()
		}
		sort.Strings(lines)
		return nil, coded(codeNetworkDefinitionInvalid, "definition %s of network %s does not validate:\n%s", e.DefinitionPath, e.NetworkID, strings.Join(lines, "\n"))
	}
	if n.NetworkID != e.NetworkID {
		return nil, coded(codeNetworkIDMismatch, "definition %s declares network_id %s, the allow-list says %s", e.DefinitionPath, n.NetworkID, e.NetworkID)
	}
	return n, nil
}

func duplicateKey(m *yaml.Node, where string) error {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i].Value
		if seen[k] {
			return coded(codeAllowlistParseError, "allow-list %s: duplicate key %q (line %d)", where, k, m.Content[i].Line)
		}
		seen[k] = true
	}
	return nil
}
