package kintoneapi

// Where returns the records whose field equals one of values exactly, in their order.
//
// kintone's `=` and `in` on a non-unique SINGLE_LINE_TEXT field are token matches, not string
// equality: `run_id = "k"` also returns "k_trial2" and "x-k" (ASCII case folded). Every read
// by such a field must keep only the exact matches with Where before it counts or uses them.
func Where(recs []Record, field string, values ...string) []Record {
	want := make(map[string]bool, len(values))
	for _, v := range values {
		want[v] = true
	}
	var out []Record
	for _, r := range recs {
		if want[r.Str(field)] {
			out = append(out, r)
		}
	}
	return out
}
