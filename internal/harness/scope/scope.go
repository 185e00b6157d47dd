// Package scope makes every identifier one scenario uses and renders fixture
// networks into the scenario's work dir with those identifiers.
//
// Safety rule: every identifier generated for a scenario starts with
// KSQL_FLOW_TEST_ (Prefix), so that the safety preflight can prove, before
// anything runs, that nothing the scenario writes can be mistaken for
// production data, and so that cleanup can find the scenario's records.
// Identifiers() returns everything generated so far for that check.
//
// Forms (scope = ID()):
//
//	scope        KSQL_FLOW_TEST_<yyMMddHHmmss UTC>_<4 hex random>_<label>     ≤ 48 chars
//	business key <scope>
//	network id   <scope>_<fixture network id>                                 ≤ 64 chars
//	node id      <scope>_<fixture node id>                                    ≤ 128 chars
//	job id       KSQL_FLOW_TEST_<first 8 hex of SHA-256(scope)>_<fixture job> ≤ 60 UTF-16 units
//	reason       <scope>:<text>
//	principal    KSQL_FLOW_TEST_<hash8>_<name>
//	host         KSQL_FLOW_TEST_<hash8>_poller
//	barrier id   <scope>_<name>
//
// Decisions on gaps (see also Render):
//
//   - The label is sanitised to [A-Za-z0-9_] (other characters become "_",
//     runs collapse, ends are trimmed) and truncated so the scope stays within
//     48 characters. The brief allowed 64; 48 leaves at least 15 characters
//     for the fixture part of a network id, which must itself stay within 64
//     and must keep the whole scope as its prefix (cleanup and the scheduled
//     business key `{network_id}@{yyyy}-{MM}` rely on that prefix).
//     Uniqueness comes from the timestamp and random part, not the label.
//   - The timestamp is UTC, so scopes sort the same on every machine.
//   - Node ids are prefixed with the scope, as the original P2-01/P2-16/CSV
//     harness did (the original M5–M8 series kept fixture node names). flowtest
//     runs every series under KSQL_FLOW_TEST_ scopes and checks every
//     generated identifier for the prefix, so node ids are prefixed in every
//     series; it costs only longer strings and makes a leftover NODE_STATE
//     attributable by its node_id alone. Steps keep speaking fixture names and
//     translate with NodeID (or Rendered.NodeIDs).
//   - Principal and Host carry the short scope hash rather than the fixed
//     KSQL_FLOW_TEST_service / KSQL_FLOW_TEST_poller of the original, so audit
//     records written under them point back to one scenario; requester and
//     service principal stay distinct as DISTINCT_APPROVER_REQUIRED needs.
//   - Lengths are counted in UTF-16 code units (kintone's and kSQL-Flow's
//     unit); for ASCII and Japanese text that equals the character count.
//   - A network or node id that would exceed its limit is shortened
//     deterministically: the fixture part is cut and "_<6 hex of SHA-256 of the
//     fixture part>" appended, so distinct fixture ids stay distinct and the
//     scope prefix is kept. A job id that would exceed 60 units is refused
//     instead: it must equal the SQL header name and the JOB log job_id the
//     scenario asserts on, so a silently different name would only confuse.
package scope

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Prefix starts every identifier a scenario generates.
const Prefix = "KSQL_FLOW_TEST_"

// Limits, in UTF-16 code units.
const (
	MaxScopeLen     = 48  // see the package comment for why not 64
	MaxNetworkIDLen = 64  // brief: network ids stay within kintone's 64-char single-line limit
	MaxNodeIDLen    = 128 // FlowNet identifier rule: 1–128 characters
	MaxJobIDLen     = 60  // so that "e2e:" + job id fits the 64-unit job lock key
	MaxJobKeyLen    = 64  // kSQL-Flow job_key = <profile>:<job_id>, unique single-line text
)

// Scope holds one scenario's identifiers. It is safe for concurrent use:
// steps that start two pollers at once may ask for identifiers from both.
type Scope struct {
	id    string
	hash8 string

	mu     sync.Mutex
	idents []string
	seen   map[string]bool
}

// New creates a scope for a scenario. label is typically the scenario id
// ("p2-16-02-cancel-claim-race"); now is the scenario start; rnd supplies the
// 4 random hex digits (nil means crypto/rand).
func New(label string, now time.Time, rnd io.Reader) (*Scope, error) {
	clean := sanitize(label)
	if clean == "" {
		return nil, fmt.Errorf("scope label %q has no letters or digits", label)
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	var b [2]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return nil, fmt.Errorf("scope random part: %w", err)
	}
	head := Prefix + now.UTC().Format("060102150405") + "_" + hex.EncodeToString(b[:]) + "_"
	room := MaxScopeLen - len(head)
	if len(clean) > room {
		clean = strings.TrimRight(clean[:room], "_")
	}
	id := head + clean
	sum := sha256.Sum256([]byte(id))
	s := &Scope{id: id, hash8: hex.EncodeToString(sum[:])[:8], seen: map[string]bool{}}
	s.add(id)
	return s, nil
}

// ID returns the scope: KSQL_FLOW_TEST_<yyMMddHHmmss>_<4 hex>_<label>.
func (s *Scope) ID() string { return s.id }

// Hash8 returns the first 8 hex digits of SHA-256(scope), the short scope
// marker used in job ids, principals and the host.
func (s *Scope) Hash8() string { return s.hash8 }

// BusinessKey returns the business key of the scenario's explicit-policy runs:
// the scope itself, so cleanup finds every Run by key prefix.
func (s *Scope) BusinessKey() string { return s.add(s.id) }

// JobID returns KSQL_FLOW_TEST_<hash8>_<name> for a fixture job id. It is
// refused when the result exceeds MaxJobIDLen UTF-16 units or name is not a
// valid FlowNet identifier (empty, ":" or control characters, surrounding
// spaces that the SQL header would lose).
func (s *Scope) JobID(name string) (string, error) {
	if err := checkName("job id", name); err != nil {
		return "", err
	}
	id := Prefix + s.hash8 + "_" + name
	if n := units(id); n > MaxJobIDLen {
		return "", fmt.Errorf("job id %q for fixture job %q is %d UTF-16 units, over the %d limit (the job lock key <profile>:<job_id> must fit in %d); shorten the fixture job name to at most %d",
			id, name, n, MaxJobIDLen, MaxJobKeyLen, MaxJobIDLen-units(Prefix)-len(s.hash8)-1)
	}
	return s.add(id), nil
}

// CheckJobKey refuses a job id whose kSQL-Flow job lock key
// "<profile>:<job_id>" exceeds MaxJobKeyLen UTF-16 code units. FlowNet's
// validate does not check this; the real system fails later with a
// VALIDATION_ERROR, so flowtest checks it in the preflight.
func (s *Scope) CheckJobKey(profile, jobID string) error {
	key := profile + ":" + jobID
	if n := units(key); n > MaxJobKeyLen {
		return fmt.Errorf("job lock key %q is %d UTF-16 units, over kSQL-Flow's %d limit", key, n, MaxJobKeyLen)
	}
	return nil
}

// NetworkID returns <scope>_<fixture network id>, shortened as described in
// the package comment when it would exceed MaxNetworkIDLen.
func (s *Scope) NetworkID(fixtureNetworkID string) string {
	return s.add(fit(s.id+"_", fixtureNetworkID, MaxNetworkIDLen))
}

// NodeID returns <scope>_<fixture node id> (see the package comment for why
// node ids are prefixed), shortened when it would exceed MaxNodeIDLen.
func (s *Scope) NodeID(name string) string {
	return s.add(fit(s.id+"_", name, MaxNodeIDLen))
}

// Reason returns a request reason, <scope>:<text>. The harness's kintone
// guard accepts request writes only with this prefix.
func (s *Scope) Reason(text string) string { return s.add(s.id + ":" + text) }

// Principal returns an operator identity for KSQL_FLOWNET_SERVICE_PRINCIPAL or
// KSQL_FLOWNET_REQUESTED_BY, e.g. Principal("service"),
// Principal("direct_requester").
func (s *Scope) Principal(name string) string {
	return s.add(Prefix + s.hash8 + "_" + orDefault(sanitize(name), "principal"))
}

// Host returns the poller / FlowNet host identity (KSQL_FLOWNET_HOST).
func (s *Scope) Host() string { return s.add(Prefix + s.hash8 + "_poller") }

// BarrierID returns a fault-proxy barrier id, <scope>_<name>, e.g.
// BarrierID("claim_before").
func (s *Scope) BarrierID(name string) string {
	return s.add(s.id + "_" + orDefault(sanitize(name), "barrier"))
}

// Identifiers returns every identifier generated so far, in order of first
// generation, without duplicates, for the safety preflight.
func (s *Scope) Identifiers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.idents...)
}

func (s *Scope) add(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.seen[id] {
		s.seen[id] = true
		s.idents = append(s.idents, id)
	}
	return id
}

// sanitize maps a label to [A-Za-z0-9_]: any other character becomes "_",
// runs of "_" collapse and leading/trailing "_" are dropped.
func sanitize(label string) string {
	var b strings.Builder
	lastUnderscore := true // drops leading "_"
	for _, r := range label {
		ok := r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		if ok {
			b.WriteRune(r)
			lastUnderscore = false
			continue
		}
		if !lastUnderscore {
			b.WriteByte('_')
			lastUnderscore = true
		}
	}
	return strings.TrimRight(b.String(), "_")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

var errEmptyName = errors.New("empty")

// checkName applies FlowNet's identifier rules that matter for renaming: the
// name is kept verbatim inside a longer id and written into an SQL header.
func checkName(what, name string) error {
	if name == "" {
		return fmt.Errorf("fixture %s: %w", what, errEmptyName)
	}
	if strings.TrimSpace(name) != name {
		return fmt.Errorf("fixture %s %q has leading or trailing spaces", what, name)
	}
	for _, r := range name {
		if r == ':' || unicode.IsControl(r) || r == utf8.RuneError {
			return fmt.Errorf("fixture %s %q contains %q, which FlowNet identifiers may not", what, name, r)
		}
	}
	return nil
}

// units counts UTF-16 code units, the unit of kintone's and kSQL-Flow's limits.
func units(s string) int {
	n := 0
	for _, r := range s { // invalid UTF-8 arrives as U+FFFD: one unit
		n += utf16.RuneLen(r)
	}
	return n
}

// fit returns prefix+name if it fits in max units, else prefix + a head of
// name + "_" + 6 hex of SHA-256(name). The caller guarantees that prefix
// leaves room for at least the hash (MaxScopeLen makes sure of that).
func fit(prefix, name string, max int) string {
	if units(prefix)+units(name) <= max {
		return prefix + name
	}
	sum := sha256.Sum256([]byte(name))
	tail := "_" + hex.EncodeToString(sum[:])[:6]
	room := max - units(prefix) - len(tail)
	var head strings.Builder
	used := 0
	for _, r := range name {
		w := utf16.RuneLen(r)
		if used+w > room {
			break
		}
		head.WriteRune(r)
		used += w
	}
	return prefix + strings.TrimRight(head.String(), "_") + tail
}
