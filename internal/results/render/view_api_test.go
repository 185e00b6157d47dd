package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The split by origin is listed sender by sender, as a run meets them; counts of an archive
// without it show a dash.
func TestOriginsTextOrdersTheSenders(t *testing.T) {
	assert.Equal(t, "harness 3, flownet 2, ksql-flow 1, zeta 4", originsText(map[string]int64{"zeta": 4, "ksql-flow": 1, "harness": 3, "flownet": 2}))
	assert.Equal(t, "ksql-flow 7", originsText(map[string]int64{"ksql-flow": 7}))
	assert.Equal(t, "-", originsText(nil))
}
