package safety

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRule1Target(t *testing.T) {
	cases := []struct {
		name   string
		mod    func(*Input)
		reason string
	}{
		{"live from env is refused", func(in *Input) { in.TargetOrigin = OriginOSEnv }, "--target live"},
		{"live from .env is refused", func(in *Input) { in.TargetOrigin = OriginDotEnv }, "--target live"},
		{"live defaulted is refused", func(in *Input) { in.TargetOrigin = OriginDefault }, "--target live"},
		{"unknown target", func(in *Input) { in.Target = "Live" }, "unknown target"},
		{"production target", func(in *Input) { in.Target = "production" }, "unknown target"},
		{"FLOWTEST_TARGET=live while sandbox", func(in *Input) {
			in.Target, in.TargetOrigin = TargetSandbox, OriginDefault
			in.TargetHints = []Setting{{Name: VarTargetHint, Value: "live", Origin: OriginDotEnv}}
		}, "never honoured"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := validLive()
			tc.mod(&in)
			rep := Preflight(in)
			v := failed(rep, "target")
			require.NotEmpty(t, v, "%+v", rep.Checks)
			require.Contains(t, v[0].Reason, tc.reason)
		})
	}
	t.Run("sandbox default passes", func(t *testing.T) {
		in := validLive()
		in.Target, in.TargetOrigin = TargetSandbox, OriginDefault
		require.Empty(t, failed(Preflight(in), "target"))
	})
}

func TestRule2Profile(t *testing.T) {
	cases := []struct {
		value  string
		origin Origin
		ok     bool
		reason string
	}{
		{"", OriginUnset, true, ""}, // unset → default e2e
		{"e2e", OriginOSEnv, true, ""},
		{"staging-e2e", OriginDotEnv, true, ""},
		{"prod", OriginOSEnv, false, "production profile"},
		{"PROD", OriginOSEnv, false, "production profile"},
		{" Prod ", OriginOSEnv, false, "production profile"},
		{"prod\t", OriginOSEnv, false, "production profile"},
		{"Production", OriginOSEnv, false, "deny list"},
		{"", OriginFlag, false, "empty"},
		{"   ", OriginOSEnv, false, "empty"},
		{" e2e", OriginOSEnv, false, "whitespace"},
		{"e2e:x", OriginOSEnv, false, "':'"},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.value, " ", "_")+"/"+string(tc.origin), func(t *testing.T) {
			in := validLive()
			in.Profile = Setting{Name: VarProfile, Value: tc.value, Origin: tc.origin}
			rep := Preflight(in)
			if tc.ok {
				require.True(t, rep.OK(), "%+v", rep.Violations())
				return
			}
			requireOnlyViolation(t, rep, "profile", VarProfile, tc.reason)
		})
	}
	t.Run("default is e2e", func(t *testing.T) {
		require.Equal(t, "e2e", Input{}.EffectiveProfile())
	})
}

func TestRule3AppIDs(t *testing.T) {
	cases := []struct {
		value  string
		check  string
		reason string
	}{
		{"04249", "app-id", "leading zero"},
		{"04257", "app-id", "leading zero"},
		{"+4257", "app-id", "sign"},
		{"4257.0", "app-id", "not a decimal integer"},
		{" 4257", "app-id", "whitespace"},
		{"4257 ", "app-id", "whitespace"},
		{"-1", "app-id", "negative"},
		{"0", "app-id", "not positive"},
		{"000", "app-id", "not positive"},
		{"abc", "app-id", "not a decimal integer"},
		{"４２５７", "app-id", "not a decimal integer"}, // full-width digits
		{"1e3", "app-id", "not a decimal integer"},
		{"0x10", "app-id", "not a decimal integer"},
		{"4249", "app-denylist", "deny list"},
		{"4261", "app-denylist", "deny list"},
	}
	for _, tc := range cases {
		t.Run(tc.value, func(t *testing.T) {
			in := withSetting(validLive(), VarAppExec, tc.value, OriginOSEnv)
			requireOnlyViolation(t, Preflight(in), tc.check, VarAppExec, tc.reason)
		})
	}
	t.Run("empty required app", func(t *testing.T) {
		in := withSetting(validLive(), VarAppLog, "", OriginUnset)
		requireOnlyViolation(t, Preflight(in), "app-id", VarAppLog, "required")
	})
	t.Run("set to empty string is refused", func(t *testing.T) {
		in := withSetting(validLive(), VarAppAudit, "", OriginFlag)
		requireOnlyViolation(t, Preflight(in), "app-id", VarAppAudit, "empty")
	})
	t.Run("request and CSV apps required by declared needs", func(t *testing.T) {
		in := withSetting(validLive(), VarAppReq, "", OriginUnset)
		in = withSetting(in, VarAppCSV, "", OriginUnset)
		in.ScenarioNeeds = map[string]Needs{
			"m5-serial-success":          {},
			"p2-16-02-cancel-claim-race": {RequestApp: true},
			"csv1-01-import-run":         {RequestApp: true, CSV: true},
		}
		in.Scenarios = []string{"m5-serial-success"}
		require.True(t, Preflight(in).OK(), "%+v", Preflight(in).Violations())
		in.Scenarios = []string{"p2-16-02-cancel-claim-race"}
		requireOnlyViolation(t, Preflight(in), "app-id", VarAppReq, "required")
		in.Scenarios = []string{"csv1-01-import-run"}
		require.Len(t, failed(Preflight(in), "app-id"), 2, "request and CSV apps")
		in.Scenarios = []string{"m5-serial-success", "m6-01-resume-identity"} // m6-01 declared nothing
		require.Len(t, failed(Preflight(in), "app-id"), 2, "an undeclared scenario fails closed")
		in.Scenarios = nil // nil = all scenarios
		require.NotEmpty(t, failed(Preflight(in), "app-id"))
	})
	t.Run("request tokens required by declared needs", func(t *testing.T) {
		in := withSetting(validLive(), VarTokenRequests, "", OriginUnset)
		in = withSetting(in, VarTokenRequestsRO, "", OriginUnset)
		in.Scenarios = []string{"m5-serial-success"}
		in.ScenarioNeeds = map[string]Needs{"m5-serial-success": {}}
		require.Empty(t, failed(Preflight(in), "token-present"))
		in.ScenarioNeeds["m5-serial-success"] = Needs{RequestApp: true}
		require.Len(t, failed(Preflight(in), "token-present"), 2)
	})
	distinct := []struct{ a, b string }{
		{VarAppExec, VarAppAudit}, {VarAppReq, VarAppExec}, {VarAppReq, VarAppLog},
		{VarAppCSV, VarAppAudit}, {VarAppCSV, VarAppReq}, {VarAppCust, VarAppExec}, {VarAppDeals, VarAppCSV},
	}
	for _, d := range distinct {
		t.Run("distinct "+d.a+"="+d.b, func(t *testing.T) {
			in := validLive()
			other, _ := in.app(roleOf(d.b))
			in = withSetting(in, d.a, other.Value, OriginOSEnv)
			requireOnlyViolation(t, Preflight(in), "app-distinct", d.a, "distinct")
		})
	}
	t.Run("equals production request app", func(t *testing.T) {
		in := validLive()
		in.ProductionRequestApp = set(VarProdReqID, "4267")
		requireOnlyViolation(t, Preflight(in), "production-request", VarAppReq, "production request app")
	})
}

func roleOf(name string) AppRole {
	for _, a := range AppCatalog() {
		if a.Name == name {
			return a.Role
		}
	}
	panic(name)
}

func TestRule4DenyList(t *testing.T) {
	t.Run("live with empty list fails closed", func(t *testing.T) {
		in := validLive()
		in.DenyList = DenyList{}
		requireOnlyViolation(t, Preflight(in), "denylist", "deny list", "fail closed")
	})
	t.Run("live with no app entry", func(t *testing.T) {
		in := validLive()
		in.DenyList = DenyList{Profiles: []string{"prod"}}
		requireOnlyViolation(t, Preflight(in), "denylist", "deny list", "production app id")
	})
	t.Run("sandbox tolerates empty list", func(t *testing.T) {
		in := validLive()
		in.Target, in.TargetOrigin = TargetSandbox, OriginDefault
		in.DenyList = DenyList{}
		require.Empty(t, failed(Preflight(in), "denylist"))
	})
	t.Run("malformed file entry fails in any mode", func(t *testing.T) {
		in := validLive()
		in.Target, in.TargetOrigin = TargetSandbox, OriginDefault
		in.DenyListErrors = []string{"safety/production-denylist.txt:3: entry \"4261\" is not kind:value"}
		requireOnlyViolation(t, Preflight(in), "denylist", VarDenyListFile, "kind:value")
	})
	t.Run("parse file", func(t *testing.T) {
		d, err := ParseDenyList(strings.NewReader("\uFEFF# c\napp:4261 # state\n\n job:intake_count\nprofile: prod\n"), "f")
		require.NoError(t, err)
		require.Equal(t, []string{"4261"}, d.Apps)
		require.Equal(t, []string{"intake_count"}, d.Jobs)
		require.Equal(t, []string{"prod"}, d.Profiles)
	})
	for _, bad := range []string{"4261", "app:04261", "app:x", "user:bob", "app:"} {
		t.Run("malformed "+bad, func(t *testing.T) {
			_, err := ParseDenyList(strings.NewReader(bad+"\n"), "f")
			require.Error(t, err)
			_, err = ParseDenyListEntries(bad, "ENV")
			require.Error(t, err)
		})
	}
	t.Run("env entries merge", func(t *testing.T) {
		e, err := ParseDenyListEntries("app:1, job:x;profile:live-prod  app:2", "ENV")
		require.NoError(t, err)
		m := testDenyList().Merge(e)
		require.True(t, m.HasApp("1"))
		require.True(t, m.HasApp("04249"), "non-canonical spelling of a denied id is still denied")
		require.True(t, m.HasJob("X"))
		require.True(t, m.HasProfile(" LIVE-PROD "))
		require.True(t, m.HasJob("KSQL_FLOW_TEST_0123abcd_intake_count"), "re-prefixed production job id")
		require.False(t, m.HasJob("KSQL_FLOW_TEST_0123abcd_m5_shared_read"))
	})
	t.Run("shipped file parses and denies the known production apps", func(t *testing.T) {
		b, err := readShipped()
		require.NoError(t, err)
		d, err := ParseDenyList(bytes.NewReader(b), "production-denylist.txt")
		require.NoError(t, err)
		for _, id := range []string{"4249", "4261", "4262"} {
			require.True(t, d.HasApp(id), id)
		}
		require.True(t, d.HasJob("monthly_deal_summary"))
		require.True(t, d.HasProfile("prod"))
	})
}

func TestRule5Tokens(t *testing.T) {
	pairs := [][2]string{
		{VarTokenExec, VarTokenExecRO}, {VarTokenAudit, VarTokenAuditRO},
		{VarTokenLogs, VarTokenLogsRO}, {VarTokenRequests, VarTokenRequestsRO},
	}
	for _, p := range pairs {
		t.Run("separation "+p[0], func(t *testing.T) {
			in := validLive()
			w, _ := in.token(p[0])
			in = withSetting(in, p[1], "  "+w.Value+"\t", OriginDotEnv) // compared after trimming
			requireOnlyViolation(t, Preflight(in), "token-separation", p[0], "read-only counterpart")
		})
	}
	t.Run("csv token equals another token", func(t *testing.T) {
		in := validLive()
		w, _ := in.token(VarTokenExec)
		in = withSetting(in, VarTokenCSV, w.Value, OriginOSEnv)
		requireOnlyViolation(t, Preflight(in), "token-distinct", VarTokenCSV, "same token")
	})
	t.Run("request token equals production token", func(t *testing.T) {
		in := validLive()
		w, _ := in.token(VarTokenRequests)
		in.ProductionRequestToken = set(VarProdReqTk, w.Value)
		requireOnlyViolation(t, Preflight(in), "production-request", VarTokenRequests, "production request token")
	})
	t.Run("request cleanup token equals production token", func(t *testing.T) {
		in := validLive()
		w, _ := in.token(VarTokenRequestsCleanup)
		in.ProductionRequestToken = set(VarProdReqTk, w.Value)
		requireOnlyViolation(t, Preflight(in), "production-request", VarTokenRequestsCleanup, "production request token")
	})
	t.Run("missing required token", func(t *testing.T) {
		in := withSetting(validLive(), VarTokenLogsRO, "", OriginUnset)
		requireOnlyViolation(t, Preflight(in), "token-present", VarTokenLogsRO, "required")
	})
	dotenv := []struct {
		name string
		ok   bool
	}{
		{VarTokenExec, false}, {VarTokenAudit, false}, {VarTokenLogs, false},
		{VarTokenRequests, false}, {VarTokenCSV, false},
		{VarTokenExecCleanup, false}, {VarTokenAuditCleanup, false}, {VarTokenRequestsCleanup, false},
		{VarProdReqTk, false},                  // production token: writable, refused
		{"KSQL_SPIKE_TOKEN_INTEGRATED", false}, // unknown: fail closed
		{"SOME_SECRET", false},
		{VarTokenExecRO, true}, {VarTokenLogsRO, true}, {VarTokenRequestsRO, true},
		{"KSQL_TOKEN_LOGS_RO", true}, {VarTokenCustomers, true}, {VarTokenDeals, true},
		{VarAppExec, true}, {VarProfile, true},
	}
	for _, d := range dotenv {
		t.Run(".env "+d.name, func(t *testing.T) {
			in := validLive()
			in.DotEnvFile = ".env"
			in.DotEnvNames = []string{d.name}
			rep := Preflight(in)
			if d.ok {
				require.True(t, rep.OK(), "%+v", rep.Violations())
				return
			}
			requireOnlyViolation(t, rep, "token-origin", d.name, "OS environment only")
		})
	}
	t.Run("writable token from a flag", func(t *testing.T) {
		in := validLive()
		in.FlagNames = []string{VarTokenExec}
		requireOnlyViolation(t, Preflight(in), "token-origin", VarTokenExec, "flag")
	})
	t.Run("token values never appear in the report", func(t *testing.T) {
		in := validLive()
		w, _ := in.token(VarTokenExec)
		in = withSetting(in, VarTokenExecRO, w.Value, OriginOSEnv)
		in = withSetting(in, VarTokenCSV, w.Value, OriginOSEnv)
		var buf bytes.Buffer
		require.NoError(t, FormatReport(&buf, Preflight(in)))
		require.NotContains(t, buf.String(), w.Value)
		require.Contains(t, buf.String(), "FAIL")
	})
}

func TestRule6BaseURL(t *testing.T) {
	cases := []struct {
		target Target
		url    string
		ok     bool
		reason string
	}{
		{TargetLive, "https://example.cybozu.com", true, ""},
		{TargetLive, "HTTPS://example.cybozu.com/", true, ""},
		{TargetLive, "http://example.cybozu.com", false, "https://"},
		{TargetLive, "https://user:pw@example.cybozu.com", false, "user-info"},
		{TargetLive, "https://user@example.cybozu.com", false, "user-info"},
		{TargetLive, "https://", false, "no host"},
		{TargetLive, "example.cybozu.com", false, "no host"},
		{TargetLive, "https://example.cybozu.com/?x=1", false, "query"},
		{TargetLive, "", false, "not set"},
		{TargetLive, "ftp://example.cybozu.com", false, "https://"},
		{TargetSandbox, "http://127.0.0.1:8443", true, ""},
		{TargetSandbox, "https://127.0.0.1:8443", true, ""},
		{TargetSandbox, "http://127.9.9.9:1", true, ""},
		{TargetSandbox, "http://[::1]:8443", true, ""},
		{TargetSandbox, "http://localhost:8443", false, "loopback IP"},
		{TargetSandbox, "https://example.cybozu.com", false, "loopback"},
		{TargetSandbox, "http://10.0.0.1:80", false, "loopback"},
		{TargetSandbox, "http://u:p@127.0.0.1:80", false, "user-info"},
	}
	for _, tc := range cases {
		t.Run(string(tc.target)+" "+tc.url, func(t *testing.T) {
			in := validLive()
			in.Target = tc.target
			in.BaseURL = Setting{Name: VarBaseURL, Value: tc.url, Origin: OriginOSEnv}
			rep := CheckTarget(in)
			if tc.ok {
				require.True(t, rep.OK(), "%+v", rep.Violations())
				return
			}
			requireOnlyViolation(t, rep, "base-url", VarBaseURL, tc.reason)
			require.NotContains(t, rep.Violations()[0].Reason, "pw", "credentials must not be echoed")
		})
	}
}

func TestRule7Identifiers(t *testing.T) {
	cases := []struct {
		name    string
		profile string
		id      Identifier
		check   string
		reason  string
	}{
		{"scope lowercase prefix", "", Identifier{Kind: IdentScope, Value: "ksql_flow_test_x"}, "identifier-prefix", "case-sensitive"},
		{"scope M5 style", "", Identifier{Kind: IdentScope, Value: "M5_261129"}, "identifier-prefix", "KSQL_FLOW_TEST_"},
		{"reason without prefix", "", Identifier{Kind: IdentReason, Value: "rerun please"}, "identifier-prefix", ""},
		{"poller host", "", Identifier{Kind: IdentPollerHost, Value: "vps-1"}, "identifier-prefix", ""},
		{"barrier", "", Identifier{Kind: IdentBarrierID, Value: " KSQL_FLOW_TEST_b"}, "identifier-prefix", ""},
		{"job id 61 units", "e", Identifier{Kind: IdentJobID, Value: TestPrefix + strings.Repeat("a", 46)}, "job-id-length", "61 UTF-16"},
		{"japanese job id lock key", "e2e-long", Identifier{Kind: IdentJobID, Value: TestPrefix + "0123abcd_" + strings.Repeat("集", 32)}, "job-lock-key-length", "65 UTF-16"},
		{"surrogate pairs count twice", "e", Identifier{Kind: IdentJobID, Value: TestPrefix + "0123abcd_" + strings.Repeat("𠮷", 19)}, "job-id-length", "62 UTF-16"},
		{"production job id", "", Identifier{Kind: IdentJobID, Value: TestPrefix + "0123abcd_intake_gate"}, "job-id-denylist", "production"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := validLive()
			if tc.profile != "" {
				in.Profile = set(VarProfile, tc.profile)
			}
			in.Identifiers = append(in.Identifiers, tc.id)
			requireOnlyViolation(t, Preflight(in), tc.check, string(tc.id.Kind), tc.reason)
		})
	}
	ok := []struct {
		name    string
		profile string
		value   string
	}{
		{"60 ascii units", "e2e", TestPrefix + strings.Repeat("a", 45)},
		{"japanese job id: 60 units although 132 bytes", "e2e", TestPrefix + "0123abcd_" + strings.Repeat("集", 36)},
		{"lock key exactly 64", "e2e", TestPrefix + strings.Repeat("a", 45)},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			in := validLive()
			in.Profile = set(VarProfile, tc.profile)
			in.Identifiers = append(in.Identifiers, Identifier{Kind: IdentJobID, Value: tc.value})
			require.True(t, Preflight(in).OK(), "%+v", Preflight(in).Violations())
		})
	}
}

func TestRule8Fixtures(t *testing.T) {
	network := func(name, content string) Fixture {
		return Fixture{Kind: FixtureNetwork, Path: "work/" + name, Content: []byte(content)}
	}
	good := "schema_version: 1\nnetwork_id: KSQL_FLOW_TEST_x_success\nnodes:\n  - id: n1\n    job_id: KSQL_FLOW_TEST_0123abcd_m5_shared_read\n    sql: jobs/a.sql\n"
	t.Run("allowed network", func(t *testing.T) {
		in := validLive()
		in.Fixtures = []Fixture{network("network-success.yaml", good)}
		require.True(t, Preflight(in).OK(), "%+v", Preflight(in).Violations())
	})
	t.Run("network outside allow-list", func(t *testing.T) {
		in := validLive()
		in.Fixtures = []Fixture{network("network-prod-monthly.yaml", good)}
		requireOnlyViolation(t, Preflight(in), "fixture-allowlist", "network-prod-monthly.yaml", "allow-list")
	})
	t.Run("manual-driver network not allowed", func(t *testing.T) {
		in := validLive()
		in.Fixtures = []Fixture{network("network-p208-live.yaml", good)}
		requireOnlyViolation(t, Preflight(in), "fixture-allowlist", "p208", "allow-list")
	})
	t.Run("explicit name wins over path", func(t *testing.T) {
		in := validLive()
		f := network("rendered-123.yaml", good)
		f.Name = "network-midfail.yaml"
		in.Fixtures = []Fixture{f}
		require.True(t, Preflight(in).OK())
	})
	t.Run("node uses a production job id", func(t *testing.T) {
		in := validLive()
		in.Fixtures = []Fixture{network("network-success.yaml", strings.Replace(good, "m5_shared_read", "monthly_deal_summary", 1))}
		requireOnlyViolation(t, Preflight(in), "fixture-job-id", "network-success.yaml", "monthly_deal_summary")
	})
	t.Run("unprefixed production job id via JobIDs", func(t *testing.T) {
		in := validLive()
		f := network("network-success.yaml", good)
		f.JobIDs = []string{"Intake_Count"}
		in.Fixtures = []Fixture{f}
		requireOnlyViolation(t, Preflight(in), "fixture-job-id", "network-success", "Intake_Count")
	})
	t.Run("sql header job id", func(t *testing.T) {
		in := validLive()
		in.Fixtures = []Fixture{{Kind: FixtureSQL, Path: "jobs/x.sql", Content: []byte("-- @ksql name: test_data_gate\nSELECT 1;")}}
		requireOnlyViolation(t, Preflight(in), "fixture-job-id", "jobs/x.sql", "test_data_gate")
	})
	t.Run("sql write refused", func(t *testing.T) {
		in := validLive()
		in.Fixtures = []Fixture{{Kind: FixtureSQL, Path: "jobs/x.sql", Content: []byte("SELECT 1; delete from LAPP_X")}}
		requireOnlyViolation(t, Preflight(in), "fixture-sql", "jobs/x.sql", "statement 2 (line 1): DELETE writes data")
	})
	t.Run("unknown kind", func(t *testing.T) {
		in := validLive()
		in.Fixtures = []Fixture{{Kind: "csv", Path: "in.csv"}}
		requireOnlyViolation(t, Preflight(in), "fixture-kind", "in.csv", "unknown")
	})
}

func TestRule9Concurrency(t *testing.T) {
	for _, tc := range []struct {
		target Target
		c      int
		ok     bool
	}{
		{TargetLive, 1, true}, {TargetLive, 0, true}, {TargetLive, 2, false}, {TargetLive, 8, false},
		{TargetSandbox, 4, true}, {TargetSandbox, -1, false},
	} {
		in := validLive()
		if tc.target == TargetSandbox {
			in.Target, in.TargetOrigin = TargetSandbox, OriginDefault
		}
		in.Concurrency = tc.c
		rep := Preflight(in)
		if tc.ok {
			require.True(t, rep.OK(), "%v %d: %+v", tc.target, tc.c, rep.Violations())
		} else {
			requireOnlyViolation(t, rep, "concurrency", "--concurrency", "")
		}
	}
}

func TestSandboxStaticPhaseIgnoresUnresolvedTarget(t *testing.T) {
	in := Input{Target: TargetSandbox, TargetOrigin: OriginDefault}
	rep := Preflight(in)
	require.True(t, rep.OK(), "%+v", rep.Violations())
	for _, c := range rep.Checks {
		require.NotEqual(t, "app-id", c.Name, "sandbox static phase must not check unresolved apps")
	}
	// Resolved target checks run separately.
	res := in.WithResolved(Resolved{
		BaseURL: "https://127.0.0.1:39999",
		Apps:    map[AppRole]string{RoleState: "1", RoleAudit: "2", RoleLog: "3", RoleRequest: "4", RoleCSV: "5"},
		Tokens: map[string]string{VarTokenExec: "a", VarTokenAudit: "b", VarTokenLogs: "c", VarTokenLogsRO: "d",
			VarTokenRequests: "e", VarTokenRequestsRO: "f", VarTokenCSV: "g", VarTokenCSVRO: "g2"},
	})
	require.True(t, CheckTarget(res).OK(), "%+v", CheckTarget(res).Violations())
	bad := in.WithResolved(Resolved{BaseURL: "https://example.cybozu.com", Apps: map[AppRole]string{RoleState: "1", RoleAudit: "1", RoleLog: "3"},
		Tokens: map[string]string{VarTokenExec: "a", VarTokenExecRO: "a"}})
	rep = CheckTarget(bad)
	for _, name := range []string{"base-url", "app-distinct", "token-separation", "token-present"} {
		require.NotEmpty(t, failed(rep, name), name)
	}
}

func TestFormatReport(t *testing.T) {
	rep := Report{Checks: []Check{
		{Name: "profile", Subject: VarProfile, OK: true, Reason: `"e2e" (default)`},
		{Name: "base-url", Subject: VarBaseURL, OK: false, Reason: "live mode requires https://\n(got http)"},
	}}
	var all, viol bytes.Buffer
	require.NoError(t, FormatReport(&all, rep))
	require.NoError(t, FormatViolations(&viol, rep))
	lines := strings.Split(strings.TrimSpace(all.String()), "\n")
	require.Len(t, lines, 2)
	require.True(t, strings.HasPrefix(lines[0], "PASS  profile "))
	require.True(t, strings.HasPrefix(lines[1], "FAIL  base-url"))
	require.Contains(t, lines[1], VarBaseURL)
	require.Contains(t, lines[1], "requires https:// (got http)")
	require.Equal(t, strings.Fields(lines[1]), strings.Fields(viol.String()))
	require.Equal(t, 1, strings.Count(viol.String(), "\n"))
	require.False(t, rep.OK())
	require.Len(t, rep.Violations(), 1)
}

func TestNewResolved(t *testing.T) {
	r := NewResolved("https://127.0.0.1:1", map[AppRole]ResolvedApp{
		RoleState:     {ID: "1", Full: "sf", Read: "sr"},
		RoleCustomers: {ID: "6", Full: "ignored", Read: "cr"},
		RoleCSV:       {ID: "5", Full: "cf", Read: "ignored"},
	})
	require.Equal(t, map[string]string{VarTokenExec: "sf", VarTokenExecRO: "sr", VarTokenCustomers: "cr", VarTokenCSV: "cf", VarTokenCSVRO: "ignored"}, r.Tokens)
	require.Equal(t, "6", r.Apps[RoleCustomers])
}
