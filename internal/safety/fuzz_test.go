package safety

import (
	"strings"
	"testing"
)

// FuzzParseDenyList: no deny-list text panics the parser; every malformed line is reported
// with the file and line; what is accepted is an entry of a known kind.
//
//	go test -run '^$' -fuzz FuzzParseDenyList -fuzztime 2m ./safety
func FuzzParseDenyList(f *testing.F) {
	f.Add("# production\napp:4261\njob:intake_count # x\nprofile:prod\n")
	f.Add("\ufeffapp:04261\r\nAPP: 12\n")
	f.Add("app:x\nweird\n")
	f.Fuzz(func(t *testing.T, text string) {
		d, err := ParseDenyList(strings.NewReader(text), "d.txt")
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "d.txt:") || strings.Contains(msg, "\n") {
				t.Fatalf("%q: error does not name d.txt:<line> on one line: %q", text, msg)
			}
			return
		}
		for _, a := range d.Apps {
			if canonicalAppID(a) != nil {
				t.Fatalf("%q: accepted app id %q", text, a)
			}
		}
		for _, l := range [][]string{d.Jobs, d.Profiles} {
			for _, v := range l {
				if strings.TrimSpace(v) == "" {
					t.Fatalf("%q: accepted an empty entry", text)
				}
			}
		}
	})
}
