package flownet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const validYAML = `schema_version: 1
network_id: net_a
business_key_policy:
  type: explicit
max_active_runs: 1
network_lock:
  lease_duration_sec: 60
  heartbeat_interval_sec: 15
nodes:
  - id: a
    job_id: job_a
    sql: jobs/a.sql
    depends_on: []
    trigger_rule: all_success
    idempotent: true
  - id: b
    job_id: job_b
    sql: jobs/b.sql
    depends_on: [a]
    idempotent: false
`

func writeNetwork(t *testing.T, yamlText string, sqlFiles ...string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "jobs"), 0o755))
	for _, f := range sqlFiles {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "jobs", f), []byte("-- @ksql name: x\nSELECT 1;\n"), 0o644))
	}
	p := filepath.Join(dir, "net.yaml")
	require.NoError(t, os.WriteFile(p, []byte(yamlText), 0o644))
	return p
}

func codes(errs []ValidationError) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Code+" "+e.Path)
	}
	return out
}

func TestLoadNetworkValid(t *testing.T) {
	n, errs := LoadNetwork(writeNetwork(t, validYAML, "a.sql", "b.sql"))
	require.Empty(t, errs)
	assert.Equal(t, "net_a", n.NetworkID)
	assert.Equal(t, 60, n.LeaseSec)
	assert.Equal(t, 15, n.HeartbeatSec)
	require.Len(t, n.Nodes, 2)
	assert.True(t, n.Nodes[0].Idempotent)
	assert.False(t, n.Nodes[1].Idempotent)
	assert.Equal(t, []string{"a"}, n.Nodes[1].DependsOn)
	assert.Equal(t, "all_success", n.Nodes[1].TriggerRule, "trigger_rule defaults to all_success")
}

func TestLoadNetworkListsEveryError(t *testing.T) {
	bad := strings.NewReplacer(
		"lease_duration_sec: 60", "lease_duration_sec: 30",
		"heartbeat_interval_sec: 15", "heartbeat_interval_sec: 30",
		"depends_on: [a]", "depends_on: [a, a, b, zz]",
		"    trigger_rule: all_success\n", "    trigger_rule: all_done\n    colour: red\n",
	).Replace(validYAML)
	_, errs := LoadNetwork(writeNetwork(t, bad, "a.sql")) // b.sql missing
	assert.ElementsMatch(t, []string{
		"NETWORK_LOCK_HEARTBEAT_NOT_LESS_THAN_LEASE /network_lock/heartbeat_interval_sec",
		"TRIGGER_RULE_UNSUPPORTED /nodes/0/trigger_rule",
		"UNKNOWN_PROPERTY /nodes/0/colour",
		"DUPLICATE_DEPENDENCY /nodes/1/depends_on/1",
		"SELF_DEPENDENCY /nodes/1/depends_on/1",
		"UNKNOWN_DEPENDENCY /nodes/1/depends_on/2",
		"SQL_FILE_UNREADABLE /nodes/1/sql",
	}, codes(errs))
	for _, e := range errs {
		assert.Regexp(t, `^- \[[A-Z_]+\] /\S*: .+$`, e.String())
	}
}

func TestLoadNetworkSchemaErrors(t *testing.T) {
	cases := map[string]struct{ from, to, want string }{
		"heartbeat over a third": {"heartbeat_interval_sec: 15", "heartbeat_interval_sec: 25", "NETWORK_LOCK_HEARTBEAT_EXCEEDS_ONE_THIRD /network_lock/heartbeat_interval_sec"},
		"schema version":         {"schema_version: 1", "schema_version: 2", "SCHEMA_INVALID /schema_version"},
		"duplicate node id":      {"id: b", "id: a", "DUPLICATE_NODE_ID /nodes/1/id"},
		"idempotent not boolean": {"idempotent: false", "idempotent: \"no\"", "SCHEMA_INVALID /nodes/1/idempotent"},
		"identifier with colon":  {"network_id: net_a", "network_id: \"net:a\"", "SCHEMA_INVALID /network_id"},
		"unknown root property":  {"max_active_runs: 1", "max_active_runs: 1\nowner: x", "UNKNOWN_PROPERTY /owner"},
		"explicit with extras":   {"type: explicit", "type: explicit\n  period: day", "UNKNOWN_PROPERTY /business_key_policy/period"},
		"max_active_runs zero":   {"max_active_runs: 1", "max_active_runs: 0", "SCHEMA_INVALID /max_active_runs"},
		"duplicate yaml key":     {"max_active_runs: 1", "max_active_runs: 1\nmax_active_runs: 2", "DUPLICATE_KEY /max_active_runs"},
		"missing nodes":          {"nodes:", "other_nodes:", "SCHEMA_INVALID /"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := LoadNetwork(writeNetwork(t, strings.Replace(validYAML, c.from, c.to, 1), "a.sql", "b.sql"))
			assert.Contains(t, codes(errs), c.want)
		})
	}
}

func TestCycleDetected(t *testing.T) {
	y := strings.Replace(validYAML, "    depends_on: []\n", "    depends_on: [b]\n", 1)
	_, errs := LoadNetwork(writeNetwork(t, y, "a.sql", "b.sql"))
	require.Len(t, errs, 1)
	assert.Equal(t, "CYCLE_DETECTED", errs[0].Code)
	assert.Contains(t, errs[0].Message, "a, b")
}

func TestScheduledPeriodPolicy(t *testing.T) {
	y := strings.Replace(validYAML, "  type: explicit\n", "  type: scheduled_period\n  period: month\n  timezone: Asia/Tokyo\n  format: \"{network_id}@{yyyy}-{MM}\"\n", 1)
	n, errs := LoadNetwork(writeNetwork(t, y, "a.sql", "b.sql"))
	require.Empty(t, errs)
	k, err := DeriveBusinessKey(n, KeyInput{ScheduledFor: "2026-08-31T16:00:00Z", HasScheduledFor: true}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, "net_a@2026-09", k.BusinessKey, "16:00Z on Aug 31 is Sep 1 in Tokyo")
	require.NotNil(t, k.AsOf, "a derived key keeps the scheduled instant as the Run's as_of")
	assert.True(t, k.AsOf.Equal(time.Date(2026, 8, 31, 16, 0, 0, 0, time.UTC)))

	bad := strings.Replace(y, "{yyyy}-{MM}", "{yyyy}-{MM}-{dd}-{hh}", 1)
	_, errs = LoadNetwork(writeNetwork(t, bad, "a.sql", "b.sql"))
	assert.ElementsMatch(t, []string{"FORMAT_PLACEHOLDER_UNSUPPORTED /business_key_policy/format", "FORMAT_PERIOD_MISMATCH /business_key_policy/format"}, codes(errs))
	tz := strings.Replace(y, "Asia/Tokyo", "Mars/Olympus", 1)
	_, errs = LoadNetwork(writeNetwork(t, tz, "a.sql", "b.sql"))
	assert.Equal(t, []string{"TIMEZONE_INVALID /business_key_policy/timezone"}, codes(errs))
}

func TestTopoOrderIsStable(t *testing.T) {
	nodes := []Node{
		{ID: "join", DependsOn: []string{"left", "right"}},
		{ID: "right"},
		{ID: "left"},
		{ID: "tail", DependsOn: []string{"join"}},
		{ID: "solo"},
	}
	order, cyc := TopoOrder(nodes)
	assert.Empty(t, cyc)
	assert.Equal(t, []string{"right", "left", "join", "tail", "solo"}, order)
	n := &Network{Nodes: nodes}
	assert.Equal(t, map[string]bool{"left": true, "join": true, "tail": true}, n.Descendants("left"))
}

func TestDeriveBusinessKeyExplicit(t *testing.T) {
	n := &Network{NetworkID: "net", Policy: KeyPolicy{Type: "explicit"}}
	now := time.Date(2026, 8, 30, 1, 2, 3, 4_000_000, time.UTC)
	k, err := DeriveBusinessKey(n, KeyInput{Manual: true}, now)
	require.NoError(t, err)
	assert.Equal(t, "net@manual-20260830T010203004Z", k.BusinessKey)

	for in, want := range map[KeyInput]string{
		{}:                                      "BUSINESS_KEY_REQUIRED",
		{BusinessKey: "", HasBusinessKey: true}: "BUSINESS_KEY_EMPTY",
		{BusinessKey: "a\tb", HasBusinessKey: true}:                                                        "BUSINESS_KEY_CONTROL_CHARACTER",
		{BusinessKey: "a:b", HasBusinessKey: true}:                                                         "RECORD_KEY_IDENTIFIER_SEPARATOR",
		{BusinessKey: strings.Repeat("x", 129), HasBusinessKey: true}:                                      "BUSINESS_KEY_TOO_LONG",
		{BusinessKey: "k", HasBusinessKey: true, ScheduledFor: "2026-08-01T00:00Z", HasScheduledFor: true}: "SCHEDULED_FOR_NOT_ALLOWED",
		{ScheduledFor: "2026-02-30T00:00Z", HasScheduledFor: true}:                                         "SCHEDULED_FOR_INVALID",
		{ScheduledFor: "2026-02-01T00:00", HasScheduledFor: true}:                                          "SCHEDULED_FOR_INVALID",
		{ScheduledFor: "2026-02-01T00:00+14:30", HasScheduledFor: true}:                                    "SCHEDULED_FOR_INVALID",
	} {
		_, err := DeriveBusinessKey(n, in, now)
		var ce *codedError
		require.ErrorAs(t, err, &ce, "%+v", in)
		assert.Equal(t, want, ce.Code, "%+v", in)
	}
}

func TestPlanCommand(t *testing.T) {
	p := writeNetwork(t, validYAML, "a.sql", "b.sql")
	var out, errb strings.Builder
	c := newCLI(nil, &out, &errb)
	require.Equal(t, 0, c.dispatch([]string{"plan", p, "--business-key", "k-1"}), errb.String())
	assert.Equal(t, "Business key: k-1\nExecution plan:\n1. a | job_id=job_a | idempotent=true | depends_on=-\n2. b | job_id=job_b | idempotent=false | depends_on=a\n", out.String())

	errb.Reset()
	assert.Equal(t, 1, c.dispatch([]string{"plan", p}))
	assert.Equal(t, "Error [BUSINESS_KEY_REQUIRED]: --business-key is required with business_key_policy explicit\n", errb.String(), "plan never generates the manual key")
}
