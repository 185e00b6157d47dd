package emulator

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// fileVal is one attachment of a FILE field, as stored (fileKey is the download key).
type fileVal struct {
	FileKey     string `json:"fileKey"`
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Size        string `json:"size"`
}

// Stored value representations per type:
//   SINGLE_LINE_TEXT, MULTI_LINE_TEXT, NUMBER (normalised decimal), DATETIME (UTC, minute,
//   "2006-01-02T15:04:00Z"), DATE ("2006-01-02"), DROP_DOWN: string, "" = empty;
//   CHECK_BOX: []string; FILE: []fileVal.

const datetimeLayout = "2006-01-02T15:04:00Z"

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// asString accepts what kintone accepts for a scalar value: a string, a number, or null.
func asString(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// normalizeNumber parses a kintone NUMBER input ("+1.50", "1.5e1", " 42 ") into its stored
// canonical decimal form ("1.5", "15", "42").
func normalizeNumber(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", true
	}
	for _, c := range s {
		// Half-width digits, sign, point and exponent only (kintone refuses full-width digits).
		if !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E') {
			return "", false
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "", false
	}
	return formatRat(r), true
}

func formatRat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	out := r.FloatString(20)
	out = strings.TrimRight(out, "0")
	return strings.TrimSuffix(out, ".")
}

var (
	reDateTime = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})$`)
	reDateOnly = regexp.MustCompile(`^(\d{4})-(\d{1,2})-(\d{1,2})$`)
	reYearMon  = regexp.MustCompile(`^(\d{4})(?:-(\d{1,2}))?$`)
)

// parseDateTime reads the DATETIME inputs kintone accepts and truncates to the minute: seconds
// and fractions are dropped (kintone ignores them), offsets are converted to UTC, a date alone
// is UTC midnight.
func parseDateTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if m := reDateTime.FindStringSubmatch(s); m != nil {
		base := fmt.Sprintf("%s-%s-%sT%s:%s:00%s", m[1], m[2], m[3], m[4], m[5], m[7])
		t, err := time.Parse(time.RFC3339, base)
		if err != nil {
			return time.Time{}, false
		}
		return t.UTC().Truncate(time.Minute), true
	}
	if m := reDateOnly.FindStringSubmatch(s); m != nil {
		t, err := time.Parse("2006-1-2", s)
		if err != nil {
			return time.Time{}, false
		}
		return t.UTC(), true
	}
	return time.Time{}, false
}

// normalizeDate reads DATE inputs ("2015", "2015-07", "2015-7-5") and zero-fills them.
func normalizeDate(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", true
	}
	if reDateOnly.MatchString(s) {
		t, err := time.Parse("2006-1-2", s)
		if err != nil {
			return "", false
		}
		return t.Format("2006-01-02"), true
	}
	if m := reYearMon.FindStringSubmatch(s); m != nil {
		mon := 1
		if m[2] != "" {
			mon, _ = strconv.Atoi(m[2])
		}
		if mon < 1 || mon > 12 {
			return "", false
		}
		return fmt.Sprintf("%s-%02d-01", m[1], mon), true
	}
	return "", false
}

// normalizeValue converts a write value for field f into its stored form. key is the error
// key prefix ("record.<code>" or "records[i].<code>"). File fields are handled by the caller.
func normalizeValue(f *FieldDef, v any, key string) (any, *apiError) {
	switch f.Type {
	case "SINGLE_LINE_TEXT", "MULTI_LINE_TEXT":
		s, ok := asString(v)
		if !ok {
			return nil, errJSON()
		}
		if f.Unique && utf16Len(s) > 64 {
			// kintone's unique single-line text limit, message as measured.
			return nil, errField(key+".value", "Enter less than 65 characters.")
		}
		return s, nil
	case "NUMBER":
		return normalizeNumberValue(v, key)
	case "DATETIME":
		s, ok := asString(v)
		if !ok {
			return nil, errJSON()
		}
		if strings.TrimSpace(s) == "" {
			return "", nil
		}
		t, ok := parseDateTime(s)
		if !ok || t.Year() < 1000 || t.Year() > 9999 {
			return nil, errField(key+".value", "Invalid datetime format.")
		}
		return t.Format(datetimeLayout), nil
	case "DATE":
		s, ok := asString(v)
		if !ok {
			return nil, errJSON()
		}
		d, ok := normalizeDate(s)
		if !ok {
			return nil, errField(key+".value", "Invalid date format.")
		}
		return d, nil
	case "DROP_DOWN":
		s, ok := asString(v)
		if !ok {
			return nil, errJSON()
		}
		if s != "" && !slices.Contains(f.Options, s) {
			return nil, errField(key+".value", fmt.Sprintf("The value, %q, is not in options.", s))
		}
		return s, nil
	case "CHECK_BOX":
		return normalizeCheckBox(f, v, key)
	}
	return nil, errJSON()
}

// normalizeNumberValue is a NUMBER write value in its stored (normalized) form.
func normalizeNumberValue(v any, key string) (any, *apiError) {
	s, ok := asString(v)
	if !ok {
		return nil, errJSON()
	}
	n, ok := normalizeNumber(s)
	if !ok {
		// Measured shape: bracket key for the number error plus the dotted required key.
		bracket := key
		if i := strings.LastIndex(key, "."); i >= 0 {
			bracket = key[:i] + "[" + key[i+1:] + "]"
		}
		return nil, errValidation(map[string][]string{bracket + ".value": {"Only numbers are allowed."}})
	}
	return n, nil
}

// normalizeCheckBox is a CHECK_BOX write value: every entry one of the field's options.
func normalizeCheckBox(f *FieldDef, v any, key string) (any, *apiError) {
	if v == nil {
		return []string{}, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errJSON()
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, errJSON()
		}
		if !slices.Contains(f.Options, s) {
			return nil, errField(fmt.Sprintf("%s.values[%d].value", key, i), fmt.Sprintf("The value, %q, is not in options.", s))
		}
		out = append(out, s)
	}
	return out, nil
}

// isEmpty is kintone's emptiness for required/unique purposes.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []string:
		return len(x) == 0
	case []fileVal:
		return len(x) == 0
	}
	return false
}

// defaultFor is the value an added record gets for a field that was not sent.
func defaultFor(f *FieldDef) any {
	switch f.Type {
	case "CHECK_BOX":
		out := []string{}
		if arr, ok := f.DefaultValue.([]any); ok {
			for _, e := range arr {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	case "FILE":
		return []fileVal{}
	}
	if s, ok := f.DefaultValue.(string); ok {
		return s
	}
	return ""
}

// readValue is the API read form of a stored value.
func readValue(f *FieldDef, v any) any {
	switch f.Type {
	case "DROP_DOWN", "DATE":
		// Unselected DROP_DOWN and empty DATE read back as null.
		if s, _ := v.(string); s == "" {
			return nil
		}
		return v
	case "CHECK_BOX":
		if v == nil {
			return []string{}
		}
	case "FILE":
		if v == nil {
			return []fileVal{}
		}
	}
	if v == nil {
		return ""
	}
	return v
}
