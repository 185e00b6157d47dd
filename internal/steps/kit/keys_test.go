package kit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The contract's published test vectors (product-contract §0.1).
func TestCanonicalKeyVectors(t *testing.T) {
	for _, v := range []struct {
		prefix string
		parts  []string
		want   string
	}{
		{"R1", []string{"prod", "network-a", "order-001"}, "R1:hQ79__q9w3IfdLNDl2KmAzNBTImp5Xnnkno4srTxNPc"},
		{"N1", []string{"prod", "monthly_close"}, "N1:dmj63FYc2G5JrhGrGQl6Ybua-wtKm-b9IezI1sWgxek"},
		{"S1", []string{"run_001", "node_a"}, "S1:BEFrIa66C569EYh-HUIDuaJgIxvmX622KEfWHzN9Xbo"},
		{"A1", []string{"run_001", "node_a", "1"}, "A1:hHEySfH-2RIbk73J9iv3OBs1r9HyTk-X2EGijmAJfns"},
	} {
		got, err := CanonicalKey(v.prefix, v.parts...)
		require.NoError(t, err)
		assert.Equal(t, v.want, got, v.prefix)
		assert.Len(t, got, 46)
	}
}

func TestCanonicalKeyRefusesBadComponents(t *testing.T) {
	for _, p := range []string{"", "a:b", "a\x00b", "café"} {
		_, err := CanonicalKey("R1", "prod", p, "k")
		assert.Error(t, err, "%q", p)
	}
}

var fixedTime = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
