package safety

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// httpPending reads pending requests over HTTP from a test server, standing
// in for the kintone client: every call is a real request the server counts.
type httpPending struct{ url string }

func (h httpPending) PendingRequests(ctx context.Context, app string) ([]PendingRequest, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url+"/k/v1/records.json?app="+app, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []PendingRequest
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return out, nil
}

type counters struct {
	requests, resolves, starts atomic.Int32
}

func newCountingServer(t *testing.T, c *counters, pending []PendingRequest) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		_ = json.NewEncoder(w).Encode(pending)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// plan wires the counters; Start would start a real child process, so a
// call would be visible both as a count and as a process.
func plan(t *testing.T, c *counters, srv *httptest.Server, resolved Resolved) Plan {
	return Plan{
		Resolve: func(ctx context.Context) (Resolved, error) {
			c.resolves.Add(1)
			return resolved, nil
		},
		Pending: httpPending{url: srv.URL},
		Start: func(ctx context.Context, in Input) error {
			c.starts.Add(1)
			// Also send traffic, as scenarios would.
			resp, err := http.Get(srv.URL + "/k/v1/record.json")
			if err == nil {
				resp.Body.Close()
			}
			return exec.CommandContext(ctx, "true").Run()
		},
	}
}

func goodResolved() Resolved {
	return Resolved{
		BaseURL: "https://127.0.0.1:1",
		Apps:    map[AppRole]string{RoleState: "1", RoleAudit: "2", RoleLog: "3", RoleRequest: "4", RoleCSV: "5"},
		Tokens: map[string]string{VarTokenExec: "a", VarTokenAudit: "b", VarTokenLogs: "c", VarTokenLogsRO: "d",
			VarTokenRequests: "e", VarTokenRequestsRO: "f", VarTokenCSV: "g", VarTokenCSVRO: "g2"},
	}
}

func TestGateOrdering(t *testing.T) {
	liveBroken := func(f func(*Input)) Input { in := validLive(); f(&in); return in }
	sandbox := func(f func(*Input)) Input {
		in := Input{Target: TargetSandbox, TargetOrigin: OriginDefault}
		f(&in)
		return in
	}
	cases := []struct {
		name     string
		in       Input
		resolved Resolved
		pending  []PendingRequest
		// expected counts
		requests, resolves, starts int32
		refused                    bool
	}{
		{"live: production profile", liveBroken(func(in *Input) { in.Profile = set(VarProfile, "prod") }), Resolved{}, nil, 0, 0, 0, true},
		{"live: http base URL", liveBroken(func(in *Input) { in.BaseURL = set(VarBaseURL, "http://example.cybozu.com") }), Resolved{}, nil, 0, 0, 0, true},
		{"live: writable token in .env", liveBroken(func(in *Input) { in.DotEnvNames = []string{VarTokenExec} }), Resolved{}, nil, 0, 0, 0, true},
		{"live: empty deny list", liveBroken(func(in *Input) { in.DenyList = DenyList{} }), Resolved{}, nil, 0, 0, 0, true},
		{"live: bad fixture SQL", liveBroken(func(in *Input) {
			in.Fixtures = []Fixture{{Kind: FixtureSQL, Path: "x.sql", Content: []byte("DROP TABLE x")}}
		}), Resolved{}, nil, 0, 0, 0, true},
		{"live: pending request found", validLive(), Resolved{}, []PendingRequest{{ID: "105", State: "REQUESTED"}, {ID: "106", State: "ACCEPTED"}}, 1, 0, 0, true},
		{"live: all clear", validLive(), Resolved{}, nil, 2, 0, 1, false},
		{"sandbox: identifier without prefix", sandbox(func(in *Input) {
			in.Identifiers = []Identifier{{Kind: IdentScope, Value: "M5_x"}}
		}), goodResolved(), nil, 0, 0, 0, true},
		{"sandbox: live-looking emulator URL", sandbox(func(*Input) {}), func() Resolved { r := goodResolved(); r.BaseURL = "https://example.cybozu.com"; return r }(), nil, 0, 1, 0, true},
		{"sandbox: emulator write token = read token", sandbox(func(*Input) {}), func() Resolved {
			r := goodResolved()
			r.Tokens[VarTokenRequestsRO] = r.Tokens[VarTokenRequests]
			return r
		}(), nil, 0, 1, 0, true},
		{"sandbox: all clear (no pending read in sandbox)", sandbox(func(*Input) {}), goodResolved(), nil, 1, 1, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c counters
			srv := newCountingServer(t, &c, tc.pending)
			rep, err := Gate(context.Background(), tc.in, plan(t, &c, srv, tc.resolved))
			require.Equal(t, tc.requests, c.requests.Load(), "HTTP requests")
			require.Equal(t, tc.resolves, c.resolves.Load(), "emulator starts")
			require.Equal(t, tc.starts, c.starts.Load(), "scenario starts")
			if tc.refused {
				require.ErrorIs(t, err, ErrRefused)
				require.False(t, rep.OK())
			} else {
				require.NoError(t, err)
				require.True(t, rep.OK(), "%+v", rep.Violations())
			}
		})
	}
}

type errPending struct{}

func (errPending) PendingRequests(context.Context, string) ([]PendingRequest, error) {
	return nil, errors.New("connection refused")
}

func TestCheckPendingRequests(t *testing.T) {
	ctx := context.Background()
	c := CheckPendingRequests(ctx, validLive(), errPending{})
	require.False(t, c.OK, "a read error must fail closed")
	require.Contains(t, c.Reason, "connection refused")

	in := validLive()
	in.Scenarios = []string{"m5-serial-success", "m6-01-resume-identity"}
	in.ScenarioNeeds = map[string]Needs{"m5-serial-success": {}, "m6-01-resume-identity": {}}
	c = CheckPendingRequests(ctx, in, errPending{})
	require.True(t, c.OK, "not applicable when no selected scenario declares the request app")

	// The declaration decides, not the id: a scenario declaring request-app is checked
	// whatever it is called, and one without a declaration is taken to need it.
	in.ScenarioNeeds = map[string]Needs{"m5-serial-success": {}, "m6-01-resume-identity": {RequestApp: true}}
	require.False(t, CheckPendingRequests(ctx, in, errPending{}).OK)
	in.ScenarioNeeds = map[string]Needs{"m5-serial-success": {}}
	require.False(t, CheckPendingRequests(ctx, in, errPending{}).OK, "an undeclared scenario fails closed")

	in = validLive()
	in.Target = TargetSandbox
	require.True(t, CheckPendingRequests(ctx, in, nil).OK)

	c = CheckPendingRequests(ctx, validLive(), nil)
	require.False(t, c.OK)

}

func TestGateCheckOnlySandboxDefersTarget(t *testing.T) {
	rep, err := Gate(context.Background(), Input{Target: TargetSandbox}, Plan{})
	require.NoError(t, err)
	require.True(t, rep.OK())
	require.Equal(t, "target-resolved", rep.Checks[len(rep.Checks)-1].Name)
}
