package config

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/harness/kintoneguard"
	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// TestOrderingNothingHappensOnViolation runs the real pieces end to end:
// configuration from env/.env, the preflight, the pending-request read through
// the guarded package's reader against a counting HTTPS "tenant", and a
// starter that would launch a child process. With a violation the tenant
// receives zero requests and the starter is never called.
func TestOrderingNothingHappensOnViolation(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"records":[]}`))
	}))
	defer srv.Close()

	env := func(extra ...string) []string {
		var out []string
		for _, kv := range liveEnv() {
			if !strings.HasPrefix(kv, "KSQL_SPIKE_BASE_URL=") {
				out = append(out, kv)
			}
		}
		return append(append(out, "KSQL_SPIKE_BASE_URL="+srv.URL), extra...)
	}
	cases := []struct {
		name    string
		osEnv   []string
		dotEnv  string
		concur  string
		fixture []safety.Fixture
		refused bool
	}{
		{name: "production profile", osEnv: env("KSQL_FLOWNET_PROFILE=PROD"), refused: true},
		{name: "writable token in .env", osEnv: env(), dotEnv: "KSQL_E2E_TOKEN_REQUESTS=t5\n", refused: true},
		{name: "production app id", osEnv: env("KSQL_SPIKE_APP_AUDIT=4262"), refused: true},
		{name: "non-canonical app id", osEnv: env("KSQL_E2E_LOG_APP_ID=04264"), refused: true},
		{name: "write token equals read token", osEnv: env("KSQL_E2E_TOKEN_LOGS_RO=t3"), refused: true},
		{name: "concurrency 2", osEnv: env(), concur: "2", refused: true},
		{name: "fixture SQL writes", osEnv: env(), fixture: []safety.Fixture{{Kind: safety.FixtureSQL, Path: "jobs/x.sql", Content: []byte("select 1; -- ok\n/* c */ update LAPP_X set a = 1")}}, refused: true},
		{name: "all clear", osEnv: env()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requests.Store(0)
			o := Options{Target: "live", OSEnv: tc.osEnv, SearchDir: "."}
			if tc.dotEnv != "" {
				o.EnvFile = writeEnv(t, tc.dotEnv)
			}
			if tc.concur != "" {
				o.Flags = map[string]string{"concurrency": tc.concur}
			}
			cfg, err := Load(o)
			require.NoError(t, err)
			in := cfg.SafetyInput(nil, tc.fixture)
			in.Scenarios = []string{"p2-01-01-rerun"}

			apps := cfg.LiveApps()
			reader := kintoneguard.PendingReader{API: kintoneapi.New(cfg.Get(safety.VarBaseURL), srv.Client(),
				map[string]string{apps[safety.RoleRequest].ID: apps[safety.RoleRequest].Read})}
			var started atomic.Bool
			rep, err := safety.Gate(context.Background(), in, safety.Plan{
				Pending: reader,
				Start: func(ctx context.Context, _ safety.Input) error {
					started.Store(true)
					return exec.CommandContext(ctx, os.Args[0], "-test.run=^$").Run()
				},
			})
			if tc.refused {
				require.ErrorIs(t, err, safety.ErrRefused)
				require.NotEmpty(t, rep.Violations())
				require.Zero(t, requests.Load(), "no HTTP request before the checks pass")
				require.False(t, started.Load(), "no child process before the checks pass")
				return
			}
			require.NoError(t, err, "%+v", rep.Violations())
			require.Equal(t, int32(1), requests.Load(), "exactly the read-only pending-request query")
			require.True(t, started.Load())
		})
	}
}
