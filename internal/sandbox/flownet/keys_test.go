package flownet

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The published vectors of tests/fixtures/canonical-*-key/vectors.json (product-contract §0.1).
func TestCanonicalKeysMatchPublishedVectors(t *testing.T) {
	cases := []struct {
		name string
		got  func() (string, error)
		want string
	}{
		{"N1", func() (string, error) { return N1Key("prod", "monthly_close") }, "N1:dmj63FYc2G5JrhGrGQl6Ybua-wtKm-b9IezI1sWgxek"},
		{"J1", func() (string, error) { return J1Key("prod", "aggregate_customer") }, "J1:BPh6UeK1BpEVlehbicyW2dKpo_yupn7stSUZgrzfK9U"},
		{"R1", func() (string, error) { return R1Key("prod", "network-a", "order-001") }, "R1:hQ79__q9w3IfdLNDl2KmAzNBTImp5Xnnkno4srTxNPc"},
		{"S1", func() (string, error) { return S1Key("run_001", "node_a") }, "S1:BEFrIa66C569EYh-HUIDuaJgIxvmX622KEfWHzN9Xbo"},
		{"A1", func() (string, error) { return A1Key("run_001", "node_a", 1) }, "A1:hHEySfH-2RIbk73J9iv3OBs1r9HyTk-X2EGijmAJfns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.got()
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			assert.Len(t, got, canonicalKeyLength)
		})
	}
}

func TestCanonicalKeyIdentifierErrors(t *testing.T) {
	cases := []struct {
		profile, network, code string
	}{
		{"", "n", "LOCK_KEY_IDENTIFIER_EMPTY"},
		{"p\x00", "n", "LOCK_KEY_IDENTIFIER_NUL"},
		{"p:q", "n", "LOCK_KEY_IDENTIFIER_SEPARATOR"},
		{"p", "__net__", "LOCK_KEY_IDENTIFIER_RESERVED"},
		{"p", strings.Repeat("あ", 129), "LOCK_KEY_IDENTIFIER_TOO_LONG"},
	}
	for _, c := range cases {
		_, err := N1Key(c.profile, c.network)
		var ke *KeyError
		require.ErrorAs(t, err, &ke, c.code)
		assert.Equal(t, c.code, ke.Code)
	}
	// 128 code points is still allowed, whatever its UTF-16 length.
	_, err := N1Key("p", strings.Repeat("あ", 128))
	assert.NoError(t, err)

	_, err = R1Key("p", "n", "a:b")
	var ke *KeyError
	require.ErrorAs(t, err, &ke)
	assert.Equal(t, "RECORD_KEY_IDENTIFIER_SEPARATOR", ke.Code)

	for _, n := range []int64{0, -1, maxSafeInteger + 1} {
		_, err = A1Key("r", "n", n)
		require.ErrorAs(t, err, &ke)
		assert.Equal(t, "RECORD_KEY_ATTEMPT_NO_INVALID", ke.Code)
	}
}

func TestLockDoneKeyIsHashedWhenLong(t *testing.T) {
	n1, err := N1Key("prod", "monthly_close")
	require.NoError(t, err)
	k := lockDoneKey(n1, "1b4e28ba-2fa1-11d2-883f-0016d3cca427")
	assert.True(t, strings.HasPrefix(k, "LOCKDONE:"))
	assert.LessOrEqual(t, len(k), 64)
	assert.NotContains(t, k, n1, "the long form must be the hash, not the raw key")
	assert.Equal(t, "LOCKDONE:a:b", lockDoneKey("a", "b"))
}
