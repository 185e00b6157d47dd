package excerpt

import "testing"

func TestOneLineAndLastLines(t *testing.T) {
	if got := OneLine("a\n  b\tc", 10); got != "a b c" {
		t.Errorf("OneLine collapses whitespace: %q", got)
	}
	if got := OneLine("ぁあぃいぅ", 3); got != "ぁあ…" {
		t.Errorf("OneLine cuts runes, not bytes: %q", got)
	}
	if got := LastLines("1\n2\n3\n", 2); got != "2 | 3" {
		t.Errorf("LastLines: %q", got)
	}
}
