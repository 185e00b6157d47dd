package csv

import "testing"

// The export is compared as a set of exact rows: another order passes, a changed, missing or
// repeated row and a changed header do not.
func TestRowsCSVInOrderOf(t *testing.T) {
	s := &csvIOState{rows: [][2]string{{"k1", "a"}, {"k2", "b"}, {"k3", "c"}}}
	h := "test_key,test_value\r\n"
	for _, c := range []struct {
		got       string
		same      bool // want equals got
		reordered bool
	}{
		{h + "k1,a\r\nk2,b\r\nk3,c\r\n", true, false},
		{h + "k3,c\r\nk2,b\r\nk1,a\r\n", true, true},
		{h + "k3,c\r\nk2,B\r\nk1,a\r\n", false, false},
		{h + "k3,c\r\nk1,a\r\n", false, false},
		{h + "k3,c\r\nk3,c\r\nk2,b\r\nk1,a\r\n", false, false},
		{"TEST_KEY,TEST_VALUE\r\nk1,a\r\nk2,b\r\nk3,c\r\n", false, false},
		{"\ufeff" + h + "k1,a\r\nk2,b\r\nk3,c\r\n", false, false},
		{h + "k3,c\r\nk2,b\r\nk1,a", false, false},
	} {
		want, reordered := s.rowsCSVInOrderOf(c.got)
		if (want == c.got) != c.same || reordered != c.reordered {
			t.Errorf("rowsCSVInOrderOf(%q) = %q, %v; want same=%v reordered=%v", c.got, want, reordered, c.same, c.reordered)
		}
	}
}
