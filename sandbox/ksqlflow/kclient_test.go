package ksqlflow

import (
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/kintoneapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The kintone client backs off on 429 by the profile's retry policy, not the shared default.
func TestConnRetriesByTheProfilePolicy(t *testing.T) {
	t.Setenv("KSQL_TEST_TOKEN", "tok")
	p := &Profile{BaseURL: "https://127.0.0.1:1", HTTPTimeoutMs: 1000, Apps: map[string]AppRef{"C": {AppID: "5", Token: "env:KSQL_TEST_TOKEN"}},
		Retry: Retry{MaxAttempts: 4, InitialDelayMs: 200, MaxDelayMs: 3000, RespectRetryAfter: false}}
	c, err := newConn(p, []string{"C"}, false)
	require.NoError(t, err)
	assert.Equal(t, kintoneapi.Retry{MaxAttempts: 4, Initial: 200 * time.Millisecond, Max: 3 * time.Second, IgnoreRetryAfter: true}, c.kc.Retry)

	p.Retry = Retry{MaxAttempts: 1, RespectRetryAfter: true}
	c, err = newConn(p, []string{"C"}, false)
	require.NoError(t, err)
	assert.Equal(t, 1, c.kc.Retry.MaxAttempts, "the sandbox default profile sends once")
}
