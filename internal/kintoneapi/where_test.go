package kintoneapi

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWhereKeepsExactMatchesOnly(t *testing.T) {
	recs := []Record{
		Values(map[string]any{"$id": "1", "run_id": "k"}),
		Values(map[string]any{"$id": "2", "run_id": "k_trial2"}),
		Values(map[string]any{"$id": "3", "run_id": "x-k"}),
		Values(map[string]any{"$id": "4", "run_id": "K"}),
		Values(map[string]any{"$id": "5", "run_id": "j"}),
		Values(map[string]any{"$id": "6"}),
	}
	idsOf := func(rs []Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID())
		}
		return out
	}
	assert.Equal(t, []string{"1"}, idsOf(Where(recs, "run_id", "k")))
	assert.Equal(t, []string{"1", "5"}, idsOf(Where(recs, "run_id", "j", "k")))
	assert.Equal(t, []string{"6"}, idsOf(Where(recs, "run_id", "")), "a missing field reads as empty")
	assert.Empty(t, Where(recs, "run_id"))
}
