package results

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Shards' counts add up per app and method (archive merge).
func TestAPIRequestsPlus(t *testing.T) {
	a := APIRequests{"state": {Requests: 3, ByMethod: map[string]int64{"GET": 2, "PUT": 1}, ByOrigin: map[string]int64{"harness": 2, "flownet": 1}, Throttled: 1}}
	b := APIRequests{"state": {Requests: 1, ByMethod: map[string]int64{"GET": 1}, ByOrigin: map[string]int64{"ksql-flow": 1}}, "log": {Requests: 2, ByMethod: map[string]int64{"GET": 2}}}
	assert.Equal(t, APIRequests{
		"state": {Requests: 4, ByMethod: map[string]int64{"GET": 3, "PUT": 1}, ByOrigin: map[string]int64{"harness": 2, "flownet": 1, "ksql-flow": 1}, Throttled: 1},
		"log":   {Requests: 2, ByMethod: map[string]int64{"GET": 2}},
	}, a.Plus(b))
	assert.Equal(t, int64(6), a.Plus(b).Total())
	assert.Nil(t, APIRequests(nil).Plus(nil))
	assert.Equal(t, int64(3), a.Total(), "a is left as it was")
	assert.Equal(t, map[string]int64{"harness": 2, "flownet": 1}, a["state"].ByOrigin, "a's split is left as it was")
}
