package results

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The digest names the suite's text: it changes with one feature file's content and with a
// file's name, and not with the order the files are listed in.
func TestFeaturesDigest(t *testing.T) {
	suite := fstest.MapFS{
		"manifest.yaml":           {Data: []byte("series: [m5]\n")},
		"m5/m5-01.feature":        {Data: []byte("Feature: m5\n  Scenario: one\n")},
		"fixtures/jobs/a.json":    {Data: []byte(`{"job":"a"}`)},
		"fixtures/networks/b.csv": {Data: []byte("a,b\n")},
	}
	d, err := FeaturesDigest(suite)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(d, "sha256:") && len(d) == len("sha256:")+64, d)

	again, err := FeaturesDigest(suite)
	require.NoError(t, err)
	assert.Equal(t, d, again)

	listed := []string{"m5/m5-01.feature", "manifest.yaml", "fixtures/networks/b.csv", "fixtures/jobs/a.json"}
	reordered, err := digestFiles(suite, listed)
	require.NoError(t, err)
	assert.Equal(t, d, reordered, "the order files are listed in must not matter")
	slices.Reverse(listed)
	reordered, err = digestFiles(suite, listed)
	require.NoError(t, err)
	assert.Equal(t, d, reordered)

	changed := fstest.MapFS{}
	for k, v := range suite {
		changed[k] = v
	}
	changed["m5/m5-01.feature"] = &fstest.MapFile{Data: []byte("Feature: m5\n  Scenario: one!\n")}
	other, err := FeaturesDigest(changed)
	require.NoError(t, err)
	assert.NotEqual(t, d, other, "one feature file changed")

	renamed := fstest.MapFS{}
	for k, v := range suite {
		renamed[k] = v
	}
	delete(renamed, "m5/m5-01.feature")
	renamed["m5/m5-02.feature"] = suite["m5/m5-01.feature"]
	other, err = FeaturesDigest(renamed)
	require.NoError(t, err)
	assert.NotEqual(t, d, other, "a file renamed")
}
