package config

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var dotEnvErr = regexp.MustCompile(`^f\.env:(\d+): `)

// FuzzParseDotEnv: no .env content panics the reader; every refusal is one line naming
// f.env:<line> (so godotenv never refuses something the line checks let through, and the
// two never disagree about which names the file sets); every accepted name is a valid one.
//
//	go test -run '^$' -fuzz FuzzParseDotEnv -fuzztime 2m ./harness/config
func FuzzParseDotEnv(f *testing.F) {
	for _, s := range []string{"A=1\n", "export A='x'\nB=\"y\\\"z\" # c\n", "A=\"multi\nline\"\n", "# c\r\nA: b\r\n", "A=1\nA=2\n", "A\n", "=1", "\xff\xfeA\x00=\x001\x00", "A=1\nB=\"x\x00\n\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseDotEnv("f.env", data)
		if err != nil {
			if !dotEnvErr.MatchString(err.Error()) {
				t.Fatalf("%q: error without file:line: %v", data, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error is not one line: %q", data, err)
			}
			n, _ := strconv.Atoi(dotEnvErr.FindStringSubmatch(err.Error())[1])
			if lines := bytes.Count(data, []byte("\n")) + 1; n < 1 || n > lines {
				t.Fatalf("%q: error names line %d of a text of %d lines: %v", data, n, lines, err)
			}
			return
		}
		for k := range m {
			if checkDotEnvName(k) != nil {
				t.Fatalf("%q: accepted name %q", data, k)
			}
		}
	})
}
