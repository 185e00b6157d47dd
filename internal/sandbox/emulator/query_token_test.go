package emulator

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTextEqualityIsTokenMatch: = / in on a non-unique SINGLE_LINE_TEXT field return what
// real kintone returns (exact values plus values holding the term as a run of whole tokens),
// != / not in the complement; unique text fields stay exact.
func TestTextEqualityIsTokenMatch(t *testing.T) {
	f := newFixture(t, Options{})
	tok := f.state.Tokens["full"]
	// $id 1..8; record_key (unique) carries the same text so both kinds can be queried.
	values := []string{
		"KSQL_FLOW_TEST_m5_abc",        // 1 the scope itself
		"KSQL_FLOW_TEST_m5_abc_trial2", // 2 a sub-scope extending it
		"x-KSQL_FLOW_TEST_m5_abc",      // 3 a prefix before it
		"KSQL_FLOW_TEST_m5_abcd",       // 4 last token longer: not a token match
		"ksql_flow_test_M5_ABC",        // 5 ASCII case differs
		"KSQL FLOW TEST m5.abc",        // 6 other separators
		"",                             // 7 empty
		"KSQL_FLOW_TEST_m5",            // 8 shorter than the term
	}
	for i, v := range values {
		key := v
		if key == "" {
			key = "EMPTY"
		}
		r := f.c.do("POST", "/k/v1/record.json", tok, map[string]any{"app": f.state.ID, "record": rec(
			"record_key", key, "record_type", "NETWORK_RUN", "business_key", v)})
		require.Equal(t, 200, r.status, "record %d: %s", i+1, r.body)
	}
	cases := []struct {
		name, q string
		want    []string
	}{
		{"= exact plus token runs (sub-scope _trial2 included)", `business_key = "KSQL_FLOW_TEST_m5_abc"`, []string{"1", "2", "3", "5", "6"}},
		{"in is the same match", `business_key in ("KSQL_FLOW_TEST_m5_abc")`, []string{"1", "2", "3", "5", "6"}},
		{"!= is the complement", `business_key != "KSQL_FLOW_TEST_m5_abc"`, []string{"4", "7", "8"}},
		{"not in is the complement", `business_key not in ("KSQL_FLOW_TEST_m5_abc")`, []string{"4", "7", "8"}},
		{"the sub-scope does not match its parent", `business_key = "KSQL_FLOW_TEST_m5_abc_trial2"`, []string{"2"}},
		{"a run in the middle", `business_key = "m5_abc"`, []string{"1", "2", "3", "5", "6"}},
		{"a partial token never matches", `business_key = "KSQL_FLOW_TEST_m5_ab"`, nil},
		{"in with several terms", `business_key in ("KSQL_FLOW_TEST_m5_abcd", "x")`, []string{"3", "4"}},
		{"empty term matches empty values only", `business_key = ""`, []string{"7"}},
		{"separators only match exactly", `business_key = "__"`, nil},
		{"unique field = is exact", `record_key = "KSQL_FLOW_TEST_m5_abc"`, []string{"1"}},
		{"unique field in is exact", `record_key in ("KSQL_FLOW_TEST_m5_abc", "ksql_flow_test_m5_abc")`, []string{"1"}},
		{"unique field != is the exact complement", `record_key != "KSQL_FLOW_TEST_m5_abc"`, []string{"2", "3", "4", "5", "6", "7", "8"}},
		{"unique field not in is the exact complement", `record_key not in ("KSQL_FLOW_TEST_m5_abc")`, []string{"2", "3", "4", "5", "6", "7", "8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.query(t, f.state, tc.q+" order by $id asc", nil)
			require.Equal(t, 200, r.status, "%s: %s", tc.q, r.body)
			assert.Equal(t, tc.want, ids(r), tc.q)
		})
	}
}

func TestTokenTermMatches(t *testing.T) {
	cases := []struct {
		term, value string
		want        bool
	}{
		{"k", "k", true},
		{"k", "k_trial2", true},
		{"k", "x-k", true},
		{"k", "kx", false},
		{"k", "k2", false},
		{"a_b", "a b", true},
		{"a_b", "b_a", false},
		{"a_b", "a_x_b", false},
		{"Run-1", "run_1_again", true},
		{"顧客", "顧客_A", true},
		{"顧客", "顧客管理", false}, // one token: letters of any script join
		{"É", "é", false},     // only ASCII case is folded
		{"N1:abc-DEF", "N1:abc-DEF_x", true},
		{"", "", true},
		{"", "x", false},
		{"  ", "x", false},
	}
	for _, tc := range cases {
		tt := newTokenTerm(tc.term)
		assert.Equal(t, tc.want, tt.matches(tc.value), fmt.Sprintf("%q matches %q", tc.term, tc.value))
	}
}
