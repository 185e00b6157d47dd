package safety

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func set(name, v string) Setting { return Setting{Name: name, Value: v, Origin: OriginOSEnv} }

func testDenyList() DenyList {
	return DenyList{
		Apps:     []string{"4249", "4261", "4262"},
		Jobs:     []string{"00_intake_count", "intake_count", "intake_gate", "test_data_gate", "monthly_deal_summary"},
		Profiles: []string{"prod", "production"},
	}
}

// validLive is a live Input every check accepts; tests break one thing each.
func validLive() Input {
	in := Input{
		Target: TargetLive, TargetOrigin: OriginFlag,
		BaseURL:         set(VarBaseURL, "https://example.cybozu.com"),
		DenyList:        testDenyList(),
		DenyListSources: []string{"safety/production-denylist.txt"},
		Concurrency:     1,
		Scenarios:       []string{"m5-serial-success", "p2-01-01-rerun", "csv1-01-import-run"},
	}
	apps := map[AppRole]string{RoleState: "4257", RoleAudit: "4258", RoleLog: "4264", RoleRequest: "4267", RoleCSV: "4270", RoleCustomers: "4246", RoleDeals: "4247"}
	for _, a := range AppCatalog() {
		in.Apps = append(in.Apps, App{Role: a.Role, Setting: set(a.Name, apps[a.Role])})
	}
	for _, t := range TokenCatalog() {
		in.Tokens = append(in.Tokens, NewToken(t, set(t.Name, "tok-"+strings.ToLower(t.Name))))
	}
	in.Identifiers = []Identifier{
		{Scenario: "m5-serial-success", Kind: IdentScope, Value: "KSQL_FLOW_TEST_261129223300_ab12_m5-serial-success"},
		{Scenario: "m5-serial-success", Kind: IdentJobID, Value: "KSQL_FLOW_TEST_0123abcd_m5_shared_read"},
	}
	return in
}

func withSetting(in Input, name, value string, origin Origin) Input {
	for i := range in.Apps {
		if in.Apps[i].Name == name {
			in.Apps = append([]App(nil), in.Apps...)
			in.Apps[i].Value, in.Apps[i].Origin = value, origin
			return in
		}
	}
	for i := range in.Tokens {
		if in.Tokens[i].Name == name {
			in.Tokens = append([]Token(nil), in.Tokens...)
			in.Tokens[i].Value, in.Tokens[i].Origin = value, origin
			return in
		}
	}
	panic("unknown setting " + name)
}

// failed returns the violations with the given check name.
func failed(rep Report, name string) []Check {
	var out []Check
	for _, c := range rep.Violations() {
		if c.Name == name {
			out = append(out, c)
		}
	}
	return out
}

func requireOnlyViolation(t *testing.T, rep Report, name, subjectPart, reasonPart string) {
	t.Helper()
	v := rep.Violations()
	require.NotEmpty(t, v, "expected a %s violation", name)
	for _, c := range v {
		require.Equal(t, name, c.Name, "unexpected violation: %+v", c)
	}
	require.Contains(t, v[0].Subject, subjectPart)
	require.Contains(t, v[0].Reason, reasonPart)
}

func TestValidLiveInputPasses(t *testing.T) {
	rep := Preflight(validLive())
	require.True(t, rep.OK(), "violations: %+v", rep.Violations())
	require.NotEmpty(t, rep.Checks)
}
