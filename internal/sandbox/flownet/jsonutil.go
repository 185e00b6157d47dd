package flownet

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// strp is s as an optional JSON string field: nil (null or omitted) when empty.
func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// jsonArray encodes ids as the JSON array strings the product stores in MULTI_LINE_TEXT.
func jsonArray(ids []string) string {
	if ids == nil {
		ids = []string{}
	}
	b, _ := json.Marshal(ids)
	return string(b)
}

// canonicalJSON encodes v with sorted keys and no whitespace (encoding/json sorts map keys).
func canonicalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
