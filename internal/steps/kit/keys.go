package kit

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

// CanonicalKey computes a canonical key of product-contract §0.1: `<prefix>:` + base64url
// (no padding) of SHA-256 over the components joined with NUL. The contract normalizes each
// component to NFC first; for ASCII that is the identity, and every identifier flowtest
// generates is ASCII (KSQL_FLOW_TEST_ prefix, sanitized labels), so a non-ASCII component is
// refused here rather than hashed unnormalized.
func CanonicalKey(prefix string, parts ...string) (string, error) {
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, "\x00:") {
			return "", fmt.Errorf("canonical %s key: component %q is empty or holds NUL or ':'", prefix, p)
		}
		for i := 0; i < len(p); i++ {
			if p[i] >= utf8.RuneSelf {
				return "", fmt.Errorf("canonical %s key: component %q is not ASCII (NFC normalization is not done here)", prefix, p)
			}
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(append([]string{prefix}, parts...), "\x00")))
	return prefix + ":" + base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
