package redact

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MinSecretLen is the shortest value treated as a secret.
const MinSecretLen = 8

// maxWordLen: a one-case word of letters up to this length is a setting, not a secret.
const maxWordLen = 16

// SecretRule says in words which values are not treated as secrets (see NotSecret); the
// console's warning and the README quote it.
// (Booleans — true, false, yes, off — are all shorter than 8 characters.)
var SecretRule = fmt.Sprintf("a secret value has at least %d characters and is not a number, a date or time, a duration, nor %s", MinSecretLen, oneCaseWord)

// oneCaseWord is the last kind of setting SecretRule and NotSecret name.
var oneCaseWord = fmt.Sprintf("a one-case word of up to %d letters", maxWordLen)

// NotSecret says why v is not treated as a secret value, or "" when it is one. Variables are
// picked as secrets by name (…TOKEN…, …SECRET…, …PASSWORD…), and an operator's environment
// also holds settings under such names (FEATURE_TOKEN_REFRESH=true, CACHE_TOKEN_TTL=1): a
// value like those occurs all over the archive (booleans, counts, timestamps, JSON keys and
// numbers), so redacting it would rewrite evidence while protecting nothing. The rule is the
// same for the redactor and the leak scan, so what one keeps the other does not report.
func NotSecret(v string) string {
	t := strings.TrimSpace(v)
	switch {
	case len(t) < MinSecretLen:
		return fmt.Sprintf("shorter than %d characters", MinSecretLen)
	case isNumber(t):
		return "a number"
	case isDuration(t):
		return "a duration"
	case isDateTime(t):
		return "a date or time"
	case isOneCaseWord(t):
		return oneCaseWord
	}
	return ""
}

func isNumber(s string) bool {
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return true
	}
	_, err := strconv.ParseInt(s, 0, 64) // 0x…, 0o…, 0b…, 1_000_000
	return err == nil
}

func isDuration(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil
}

var dateTimeLayouts = []string{
	time.RFC3339Nano, time.RFC3339, time.DateTime, time.DateOnly, time.TimeOnly,
	time.RFC1123, time.RFC1123Z, time.RFC822, time.RFC822Z, time.RFC850, time.ANSIC, time.UnixDate,
	"2006-01-02T15:04:05", "2006-01-02T15:04:05.999999999", "2006/01/02", "2006/01/02 15:04:05",
	"20060102T150405Z", "15:04:05.999999999",
}

func isDateTime(s string) bool {
	for _, l := range dateTimeLayouts {
		if _, err := time.Parse(l, s); err == nil {
			return true
		}
	}
	return false
}

// isOneCaseWord: letters of one case, possibly joined by '-', '_' or '.' (read-only,
// SLIDING_WINDOW), up to maxWordLen bytes.
func isOneCaseWord(s string) bool {
	if len(s) > maxWordLen {
		return false
	}
	lower, upper := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c == '-' || c == '_' || c == '.':
		default:
			return false
		}
	}
	return lower != upper
}

// keepSecrets returns the secrets (name -> value) NotSecret keeps, and why each other name
// was left out.
func keepSecrets(secrets map[string]string) (kept, skipped map[string]string) {
	kept, skipped = map[string]string{}, map[string]string{}
	for name, v := range secrets {
		if v == "" {
			continue
		}
		if why := NotSecret(v); why != "" {
			skipped[name] = why
			continue
		}
		kept[name] = v
	}
	return kept, skipped
}
