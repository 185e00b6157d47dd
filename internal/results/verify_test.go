package results

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyCleanArchiveAndPlaceholders(t *testing.T) {
	// A secret that also occurs inside its own placeholder: the placeholder is no leak.
	red := redact.New(map[string]string{"A_TOKEN": "DACTED:A_T"}, map[string]string{"7": "state"})
	a, err := Create(t.TempDir(), "x", time.Now(), red)
	require.NoError(t, err)
	require.NoError(t, a.WriteFile("log.txt", []byte("DACTED:A_T app=7 took 17 ms, 7 rows")))
	leaks, err := redact.Verify(a.Dir(), map[string]string{"A_TOKEN": "DACTED:A_T"}, []string{"7"})
	require.NoError(t, err)
	assert.Empty(t, leaks)

	_, err = redact.Verify(filepath.Join(a.Dir(), "log.txt"), nil, nil)
	assert.Error(t, err, "a file is not an archive folder")
}
