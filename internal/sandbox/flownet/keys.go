package flownet

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ksqlflow/flowtest/internal/sandbox/defect"
)

// Canonical keys (product-contract §0.1): "<prefix>:" + base64url-without-padding of
// SHA-256 over the NUL-joined components, each NFC-normalised and checked first. The
// generated key is always 46 characters, so "LOCK:"/"STATE:" prefixed record keys stay
// within kintone's 64-character unique limit.

const (
	reservedIdentifier = "__net__"
	maxIdentifierRunes = 128
	canonicalKeyLength = 46
)

// KeyError is a canonical-key input error; Code is one of the LOCK_KEY_* / RECORD_KEY_* codes.
type KeyError struct {
	Code    string
	Message string
}

func (e *KeyError) Error() string { return e.Code + ": " + e.Message }

// nfc returns s in Unicode NFC. The standard library has no normaliser and the project
// avoids golang.org/x/text; identifiers without combining marks are already NFC (the
// singleton decompositions such as U+212B are the exception we accept), and identifiers
// that do contain combining marks are rejected by checkIdentifier rather than hashed in a
// form that might differ from the real product's.
func nfc(s string) (string, bool) {
	for _, r := range s {
		if unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || (r >= 0x1100 && r <= 0x11FF) {
			return s, false
		}
	}
	return s, true
}

// checkIdentifier applies the identifier rules shared by every key component.
func checkIdentifier(prefix, what, s string) (string, error) {
	if s == "" {
		return "", &KeyError{prefix + "_IDENTIFIER_EMPTY", what + " must not be empty"}
	}
	if !utf8.ValidString(s) {
		return "", &KeyError{prefix + "_IDENTIFIER_NOT_STRING", what + " is not valid UTF-8"}
	}
	n, ok := nfc(s)
	if !ok {
		return "", &KeyError{prefix + "_IDENTIFIER_NOT_STRING", what + " contains combining characters, which this build cannot NFC-normalise"}
	}
	if strings.ContainsRune(n, 0) {
		return "", &KeyError{prefix + "_IDENTIFIER_NUL", what + " must not contain NUL"}
	}
	if strings.Contains(n, ":") {
		return "", &KeyError{prefix + "_IDENTIFIER_SEPARATOR", what + " must not contain ':'"}
	}
	if n == reservedIdentifier {
		return "", &KeyError{prefix + "_IDENTIFIER_RESERVED", what + " must not be the reserved " + reservedIdentifier}
	}
	if utf8.RuneCountInString(n) > maxIdentifierRunes {
		return "", &KeyError{prefix + "_IDENTIFIER_TOO_LONG", fmt.Sprintf("%s must be at most %d characters", what, maxIdentifierRunes)}
	}
	return n, nil
}

func hashKey(errPrefix, keyPrefix string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(append([]string{keyPrefix}, parts...), "\x00")))
	k := keyPrefix + ":" + base64.RawURLEncoding.EncodeToString(h[:])
	if len(k) != canonicalKeyLength {
		// Unreachable by construction (2+1+43); kept as the product's invariant check.
		panic(errPrefix + "_LENGTH_INVARIANT")
	}
	return k
}

func key(errPrefix, keyPrefix string, names []string, values []string) (string, error) {
	norm := make([]string, len(values))
	for i, v := range values {
		n, err := checkIdentifier(errPrefix, names[i], v)
		if err != nil {
			return "", err
		}
		norm[i] = n
	}
	return hashKey(errPrefix, keyPrefix, norm...), nil
}

// N1Key is the Network lock key of (profile, network_id).
func N1Key(profile, networkID string) (string, error) {
	return key("LOCK_KEY", "N1", []string{"profile", "network_id"}, []string{profile, networkID})
}

// J1Key is the (unused by the live Job lock) canonical job key of (profile, job_id).
func J1Key(profile, jobID string) (string, error) {
	return key("LOCK_KEY", "J1", []string{"profile", "job_id"}, []string{profile, jobID})
}

// R1Key is the NETWORK_RUN record_key of (profile, network_id, business_key).
func R1Key(profile, networkID, businessKey string) (string, error) {
	if defect.RunKeyOmitsProfile {
		return key("RECORD_KEY", "R1", []string{"network_id", "business_key"}, []string{networkID, businessKey}) // planted defect: the profile component is left out of the hash
	}
	return key("RECORD_KEY", "R1", []string{"profile", "network_id", "business_key"}, []string{profile, networkID, businessKey})
}

// S1Key is the NODE_STATE node_state_key of (run_id, node_id).
func S1Key(runID, nodeID string) (string, error) {
	return key("RECORD_KEY", "S1", []string{"run_id", "node_id"}, []string{runID, nodeID})
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: attempt_no must be a positive
// safe integer in the product.
const maxSafeInteger = 1<<53 - 1

// A1Key is the NODE_ATTEMPT attempt_key of (run_id, node_id, attempt_no).
func A1Key(runID, nodeID string, attemptNo int64) (string, error) {
	if attemptNo < 1 || attemptNo > maxSafeInteger {
		return "", &KeyError{"RECORD_KEY_ATTEMPT_NO_INVALID", fmt.Sprintf("attempt_no %d must be a positive safe integer", attemptNo)}
	}
	r, err := checkIdentifier("RECORD_KEY", "run_id", runID)
	if err != nil {
		return "", err
	}
	n, err := checkIdentifier("RECORD_KEY", "node_id", nodeID)
	if err != nil {
		return "", err
	}
	return hashKey("RECORD_KEY", "A1", r, n, strconv.FormatInt(attemptNo, 10)), nil
}

// lockDoneKey is the tombstone record_key of a released Network lock: "LOCKDONE:" +
// "<N1>:<lease_token>" when that fits 64 characters, else base64url(SHA-256) of it (§0.2).
func lockDoneKey(n1, leaseToken string) string {
	raw := n1 + ":" + leaseToken
	if len("LOCKDONE:"+raw) <= 64 {
		return "LOCKDONE:" + raw
	}
	h := sha256.Sum256([]byte(raw))
	return "LOCKDONE:" + base64.RawURLEncoding.EncodeToString(h[:])
}

// resolutionKey is the ATTEMPT_RESOLUTION record_key (used by resolve-node).
func resolutionKey(attemptID, resolvedAt string) string {
	h := sha256.Sum256([]byte(attemptID + "\x00" + resolvedAt))
	return "RES:" + hex.EncodeToString(h[:])[:60]
}
