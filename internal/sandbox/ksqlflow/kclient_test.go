package ksqlflow

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The kintone client backs off on 429 by the profile's retry policy, not the shared default.
func TestConnRetriesByTheProfilePolicy(t *testing.T) {
	p := &Profile{BaseURL: "https://127.0.0.1:1", HTTPTimeoutMs: 1000, Apps: map[string]AppRef{"C": {ID: 5, AppID: "5", Token: "tok"}},
		Retry: Retry{MaxAttempts: 4, InitialDelayMs: 200, MaxDelayMs: 3000, RespectRetryAfter: false}}
	c, err := newConn(p, []string{"C"}, false)
	require.NoError(t, err)
	assert.Equal(t, kintoneapi.Retry{MaxAttempts: 4, Initial: 200 * time.Millisecond, Max: 3 * time.Second, IgnoreRetryAfter: true}, c.kc.Retry)

	p.Retry = Retry{MaxAttempts: 1, RespectRetryAfter: true}
	c, err = newConn(p, []string{"C"}, false)
	require.NoError(t, err)
	assert.Equal(t, 1, c.kc.Retry.MaxAttempts, "maxAttempts 1 sends once")
}

// The client trusts what NODE_EXTRA_CA_CERTS names on top of the system roots, as the Node
// kSQL-Flow does: with no SSL_CERT_FILE a profile reaches the emulator through
// it alone, and a file that cannot be loaded is ignored with a warning (then TLS fails).
func TestConnTrustsNodeExtraCACerts(t *testing.T) {
	e := startEmu(t, nil)
	p, err := LoadConfig(e.cfgPath, testProfile)
	require.NoError(t, err)
	t.Setenv("SSL_CERT_FILE", "")
	read := func() error {
		c, err := newConn(p, []string{"顧客管理"}, false)
		require.NoError(t, err)
		_, err = c.kc.GetAll(context.Background(), e.apps["customers"].ID, "", []string{"$id"})
		return err
	}

	t.Setenv("NODE_EXTRA_CA_CERTS", "")
	require.Error(t, read(), "without any CA the emulator's certificate is unknown")

	t.Setenv("NODE_EXTRA_CA_CERTS", e.srv.CAFile())
	require.NoError(t, read())

	var warn strings.Builder
	missing := filepath.Join(t.TempDir(), "missing.pem")
	assert.Equal(t, "", nodeExtraCACerts(missing, &warn))
	assert.Contains(t, warn.String(), "Ignoring extra certs from `"+missing+"`")
	t.Setenv("NODE_EXTRA_CA_CERTS", missing)
	require.Error(t, read(), "an unloadable file adds nothing")
}
