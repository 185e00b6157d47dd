package scope

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const diamondYAML = `# two roots joined by n3_join
schema_version: 1
network_id: m5_diamond
description: two roots
business_key_policy:
  type: explicit
max_active_runs: 1
network_lock:
  lease_duration_sec: 60
  heartbeat_interval_sec: 15
x_future_setting: {keep: me}   # unknown keys survive
nodes:
  - id: n3_join
    job_id: m5_diamond_join
    sql: ../jobs/join.sql
    depends_on: [n1_customers, n2_deals]
    trigger_rule: all_success
    idempotent: true
  - id: n1_customers
    job_id: m5_shared_read
    sql: ../jobs/customers.sql
    depends_on: []
    idempotent: true
  - id: n2_deals
    job_id: m5_diamond_deals
    sql: ../jobs/deals.sql
    depends_on:
      - n1_customers
    idempotent: false
    outputs: { report: "report_{run_id}_{node_id}.csv" }
`

// fixture writes a fixtures tree (networks/ + jobs/) into a temp dir and
// returns the network YAML path.
func fixture(t testing.TB, networkYAML string, sql map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range sql {
		p := filepath.Join(dir, "fixtures", "jobs", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	p := filepath.Join(dir, "fixtures", "networks", "network-diamond.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(networkYAML), 0o644))
	return p
}

func diamondSQL() map[string]string {
	return map[string]string{
		"join.sql":      "-- @ksql name: m5_diamond_join\n-- @ksql timeout: 60\n-- @ksql dialect: 1\nSELECT COUNT(*) FROM 顧客管理;\n",
		"customers.sql": "\ufeff-- customers\r\n--   @ksql   name :  m5_shared_read\r\n\r\nSELECT 1; -- @ksql name: not_header\r\n",
		"deals.sql":     "-- @ksql name: m5_diamond_deals\n-- @ksql depends_on: m5_shared_read, m5_other\nSELECT '__ENC__';\n",
		"longread.sql":  "-- @ksql name: m5_shared_read\nCREATE TEMP TABLE #t AS SELECT $id FROM 顧客管理;\n",
	}
}

type renderedNet struct {
	SchemaVersion int            `yaml:"schema_version"`
	NetworkID     string         `yaml:"network_id"`
	Future        map[string]any `yaml:"x_future_setting"`
	Lock          struct {
		Lease int `yaml:"lease_duration_sec"`
	} `yaml:"network_lock"`
	Nodes []struct {
		ID        string            `yaml:"id"`
		JobID     string            `yaml:"job_id"`
		SQL       string            `yaml:"sql"`
		DependsOn []string          `yaml:"depends_on"`
		Outputs   map[string]string `yaml:"outputs"`
	} `yaml:"nodes"`
}

func readRendered(t *testing.T, path string) (renderedNet, string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var n renderedNet
	require.NoError(t, yaml.Unmarshal(raw, &n))
	return n, string(raw)
}

func TestRenderRewritesIdentifiersAndKeepsTheRest(t *testing.T) {
	s := newScope(t, "m5")
	src := fixture(t, diamondYAML, diamondSQL())
	dst := t.TempDir()

	r, err := s.Render(src, dst, RenderOptions{SQLReplace: map[string]string{"__ENC__": "UTF8"}})
	require.NoError(t, err)

	assert.Equal(t, filepath.Join(dst, "networks", "network-diamond.yaml"), r.Path)
	assert.Equal(t, "m5_diamond", r.FixtureNetworkID)
	assert.Equal(t, s.ID()+"_m5_diamond", r.NetworkID)
	join, _ := s.JobID("m5_diamond_join")
	shared, _ := s.JobID("m5_shared_read")
	deals, _ := s.JobID("m5_diamond_deals")
	other, _ := s.JobID("m5_other")
	assert.Equal(t, map[string]string{
		"n1_customers": s.ID() + "_n1_customers", "n2_deals": s.ID() + "_n2_deals", "n3_join": s.ID() + "_n3_join",
	}, r.NodeIDs)
	assert.Equal(t, map[string]string{"n1_customers": shared, "n2_deals": deals, "n3_join": join}, r.JobIDs)
	require.Len(t, r.Nodes, 3)
	assert.Equal(t, RenderedNode{
		FixtureID: "n3_join", ID: s.ID() + "_n3_join", FixtureJobID: "m5_diamond_join", JobID: join,
		SQL: filepath.Join(dst, "jobs", "join.sql"),
	}, r.Nodes[0])
	assert.Equal(t, []string{
		filepath.Join(dst, "jobs", "customers.sql"),
		filepath.Join(dst, "jobs", "deals.sql"),
		filepath.Join(dst, "jobs", "join.sql"),
		filepath.Join(dst, "networks", "network-diamond.yaml"),
	}, r.Files, "only referenced SQL is copied (longread.sql is not)")

	net, text := readRendered(t, r.Path)
	assert.Equal(t, 1, net.SchemaVersion)
	assert.Equal(t, r.NetworkID, net.NetworkID)
	assert.Equal(t, map[string]any{"keep": "me"}, net.Future)
	assert.Equal(t, 60, net.Lock.Lease)
	assert.Contains(t, text, "# two roots joined by n3_join")
	assert.Contains(t, text, "# unknown keys survive")
	require.Len(t, net.Nodes, 3)
	assert.Equal(t, s.ID()+"_n3_join", net.Nodes[0].ID)
	assert.Equal(t, join, net.Nodes[0].JobID)
	assert.Equal(t, []string{s.ID() + "_n1_customers", s.ID() + "_n2_deals"}, net.Nodes[0].DependsOn)
	assert.Equal(t, []string{s.ID() + "_n1_customers"}, net.Nodes[2].DependsOn)
	assert.Empty(t, net.Nodes[1].DependsOn)
	assert.Equal(t, "report_{run_id}_{node_id}.csv", net.Nodes[2].Outputs["report"])
	for _, n := range net.Nodes {
		// sql paths stay as written and resolve to the copies
		assert.True(t, strings.HasPrefix(n.SQL, "../jobs/"), n.SQL)
		_, err := os.Stat(filepath.Join(filepath.Dir(r.Path), filepath.FromSlash(n.SQL)))
		assert.NoError(t, err)
	}

	sqlText := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dst, "jobs", name))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "-- @ksql name: "+join+"\n-- @ksql timeout: 60\n-- @ksql dialect: 1\nSELECT COUNT(*) FROM 顧客管理;\n", sqlText("join.sql"))
	// BOM, CRLF and odd spacing kept; only the header line's value changes,
	// not a look-alike comment after the first statement.
	assert.Equal(t, "\ufeff-- customers\r\n--   @ksql   name : "+shared+"\r\n\r\nSELECT 1; -- @ksql name: not_header\r\n", sqlText("customers.sql"))
	assert.Equal(t, "-- @ksql name: "+deals+"\n-- @ksql depends_on: "+shared+", "+other+"\nSELECT 'UTF8';\n", sqlText("deals.sql"))

	// The source fixtures are untouched.
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	assert.Equal(t, diamondYAML, string(b))

	// Every generated identifier carries the prefix.
	for _, id := range s.Identifiers() {
		assert.True(t, strings.HasPrefix(id, Prefix), id)
	}
	assert.Contains(t, s.Identifiers(), r.NetworkID)
	assert.Contains(t, s.Identifiers(), shared)
}

func TestRenderSwapSQL(t *testing.T) {
	s := newScope(t, "m5")
	src := fixture(t, diamondYAML, diamondSQL())
	dst := t.TempDir()
	r, err := s.Render(src, dst, RenderOptions{SwapSQL: map[string]string{"n1_customers": "../jobs/longread.sql"}})
	require.NoError(t, err)

	net, _ := readRendered(t, r.Path)
	assert.Equal(t, "../jobs/longread.sql", net.Nodes[1].SQL)
	assert.Equal(t, filepath.Join(dst, "jobs", "longread.sql"), r.Nodes[1].SQL)
	assert.NotContains(t, r.Files, filepath.Join(dst, "jobs", "customers.sql"), "the swapped-out file is not copied")
	b, err := os.ReadFile(r.Nodes[1].SQL)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "-- @ksql name: "+r.JobIDs["n1_customers"]+"\n"))

	// An absolute replacement outside the fixture tree widens the mirrored
	// root; the YAML's sql path is rewritten to reach the copy.
	outside := filepath.Join(t.TempDir(), "elsewhere", "hold.sql")
	require.NoError(t, os.MkdirAll(filepath.Dir(outside), 0o755))
	require.NoError(t, os.WriteFile(outside, []byte("-- @ksql name: m5_shared_read\nSELECT 1;\n"), 0o644))
	dst2 := t.TempDir()
	r2, err := s.Render(src, dst2, RenderOptions{SwapSQL: map[string]string{"n1_customers": outside}})
	require.NoError(t, err)
	net2, _ := readRendered(t, r2.Path)
	resolved := filepath.Join(filepath.Dir(r2.Path), filepath.FromSlash(net2.Nodes[1].SQL))
	assert.Equal(t, r2.Nodes[1].SQL, resolved)
	assert.True(t, strings.HasPrefix(resolved, dst2+string(filepath.Separator)), resolved)
	_, err = os.Stat(resolved)
	assert.NoError(t, err)
	// the other nodes' paths still resolve
	_, err = os.Stat(filepath.Join(filepath.Dir(r2.Path), filepath.FromSlash(net2.Nodes[0].SQL)))
	assert.NoError(t, err)
}

func TestRenderSharedSQLWrittenOnce(t *testing.T) {
	yml := `schema_version: 1
network_id: n
nodes:
  - {id: a, job_id: shared, sql: ../jobs/s.sql}
  - {id: b, job_id: shared, sql: ../jobs/s.sql, depends_on: [a]}
`
	s := newScope(t, "m5")
	r, err := s.Render(fixture(t, yml, map[string]string{"s.sql": "-- @ksql name: shared\nSELECT 1;\n"}), t.TempDir(), RenderOptions{})
	require.NoError(t, err)
	assert.Len(t, r.Files, 2)
	assert.Equal(t, r.Nodes[0].SQL, r.Nodes[1].SQL)
	assert.Equal(t, r.JobIDs["a"], r.JobIDs["b"])
}

func TestRenderNumericLookingIDsStayStrings(t *testing.T) {
	yml := "schema_version: 1\nnetwork_id: 123\nnodes:\n  - id: 1\n    job_id: j\n    sql: ../jobs/j.sql\n    depends_on: []\n"
	s := newScope(t, "m5")
	r, err := s.Render(fixture(t, yml, map[string]string{"j.sql": "-- @ksql name: j\nSELECT 1;\n"}), t.TempDir(), RenderOptions{})
	require.NoError(t, err)
	net, _ := readRendered(t, r.Path)
	assert.Equal(t, s.ID()+"_123", net.NetworkID)
	assert.Equal(t, s.ID()+"_1", net.Nodes[0].ID)
}

func TestRenderErrors(t *testing.T) {
	okSQL := map[string]string{"j.sql": "-- @ksql name: j\nSELECT 1;\n"}
	node := "nodes:\n  - id: n1\n    job_id: j\n    sql: ../jobs/j.sql\n"
	cases := []struct {
		name, yaml string
		sql        map[string]string
		opts       RenderOptions
		want       string
	}{
		{"schema 2", "schema_version: 2\nnetwork_id: n\n" + node, okSQL, RenderOptions{}, "schema_version must be 1"},
		{"no schema", "network_id: n\n" + node, okSQL, RenderOptions{}, "schema_version must be 1"},
		{"no network id", "schema_version: 1\n" + node, okSQL, RenderOptions{}, "missing network_id"},
		{"no nodes", "schema_version: 1\nnetwork_id: n\nnodes: []\n", okSQL, RenderOptions{}, "nodes must be a non-empty list"},
		{"duplicate key", "schema_version: 1\nnetwork_id: n\nnetwork_id: m\n" + node, okSQL, RenderOptions{}, `duplicate key "network_id"`},
		{"duplicate node key", "schema_version: 1\nnetwork_id: n\nnodes:\n  - {id: a, job_id: j, job_id: k, sql: ../jobs/j.sql}\n", okSQL, RenderOptions{}, `duplicate key "job_id"`},
		{"duplicate node id", "schema_version: 1\nnetwork_id: n\nnodes:\n  - {id: a, job_id: j, sql: ../jobs/j.sql}\n  - {id: a, job_id: j, sql: ../jobs/j.sql}\n", okSQL, RenderOptions{}, `duplicate node id "a"`},
		{"missing job id", "schema_version: 1\nnetwork_id: n\nnodes:\n  - {id: a, sql: ../jobs/j.sql}\n", okSQL, RenderOptions{}, `node "a": missing job_id`},
		{"missing sql file", "schema_version: 1\nnetwork_id: n\n" + node, map[string]string{}, RenderOptions{}, "no such file"},
		{"no header", "schema_version: 1\nnetwork_id: n\n" + node, map[string]string{"j.sql": "SELECT 1;\n-- @ksql name: j\n"}, RenderOptions{}, "no `-- @ksql name:` header"},
		{"header mismatch", "schema_version: 1\nnetwork_id: n\n" + node, map[string]string{"j.sql": "-- @ksql name: other\nSELECT 1;\n"}, RenderOptions{}, "JOB_ID_MISMATCH"},
		{"two name headers", "schema_version: 1\nnetwork_id: n\n" + node, map[string]string{"j.sql": "-- @ksql name: j\n-- @ksql name: j\nSELECT 1;\n"}, RenderOptions{}, "second `-- @ksql name:`"},
		{"job id too long", "schema_version: 1\nnetwork_id: n\nnodes:\n  - {id: a, job_id: " + strings.Repeat("x", 37) + ", sql: ../jobs/j.sql}\n",
			map[string]string{"j.sql": "-- @ksql name: " + strings.Repeat("x", 37) + "\nSELECT 1;\n"}, RenderOptions{}, "over the 60 limit"},
		{"file shared by two job ids", "schema_version: 1\nnetwork_id: n\nnodes:\n  - {id: a, job_id: j, sql: ../jobs/j.sql}\n  - {id: b, job_id: k, sql: ../jobs/j.sql}\n", okSQL, RenderOptions{}, "different job_ids"},
		{"swap unknown node", "schema_version: 1\nnetwork_id: n\n" + node, okSQL, RenderOptions{SwapSQL: map[string]string{"n9": "../jobs/j.sql"}}, `SwapSQL names node "n9"`},
		{"depends_on not a list", "schema_version: 1\nnetwork_id: n\nnodes:\n  - {id: a, job_id: j, sql: ../jobs/j.sql, depends_on: a}\n", okSQL, RenderOptions{}, "depends_on must be a list"},
		{"not yaml", "schema_version: 1\n  network_id: [\n", okSQL, RenderOptions{}, "parse YAML"},
		{"not a mapping", "- a\n- b\n", okSQL, RenderOptions{}, "holding a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScope(t, "m5")
			src := fixture(t, c.yaml, c.sql)
			dst := t.TempDir()
			_, err := s.Render(src, dst, c.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), src, "errors name the fixture")
		})
	}
}

func TestRenderRefusesToOverwriteFixtures(t *testing.T) {
	s := newScope(t, "m5")
	src := fixture(t, diamondYAML, diamondSQL())
	root := filepath.Dir(filepath.Dir(src)) // the fixtures dir: mirroring it onto itself
	_, err := s.Render(src, root, RenderOptions{})
	require.ErrorContains(t, err, "refusing to overwrite")
	b, err := os.ReadFile(filepath.Join(root, "jobs", "join.sql"))
	require.NoError(t, err)
	assert.Equal(t, diamondSQL()["join.sql"], string(b))
}

func TestRenderSQLStandalone(t *testing.T) {
	s := newScope(t, "m5")
	dir := t.TempDir()
	src := filepath.Join(dir, "job-longread.sql")
	require.NoError(t, os.WriteFile(src, []byte("-- @ksql name: m5_shared_read\nSELECT 1;\n"), 0o644))
	dst := filepath.Join(dir, "work", "holder", "job-longread.sql")
	id, err := s.RenderSQL(src, dst, "m5_shared_read", nil)
	require.NoError(t, err)
	want, _ := s.JobID("m5_shared_read")
	assert.Equal(t, want, id)
	b, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, "-- @ksql name: "+want+"\nSELECT 1;\n", string(b))

	_, err = s.RenderSQL(src, dst, "other", nil)
	assert.ErrorContains(t, err, "JOB_ID_MISMATCH")
	_, err = s.RenderSQL(src, src, "", nil)
	assert.ErrorContains(t, err, "refusing to overwrite")
}

func BenchmarkRender(b *testing.B) {
	s, err := New("bench", t0, nil)
	require.NoError(b, err)
	src := fixture(b, diamondYAML, diamondSQL())
	dst := filepath.Join(b.TempDir(), "out")
	for b.Loop() {
		if _, err := s.Render(src, dst, RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// One fixture rendered twice as two networks (m6-06's "_local" and "_cloud" drills): the
// suffix goes into the network id before it is scoped; nodes and jobs stay the same.
func TestRenderNetworkIDSuffix(t *testing.T) {
	s := newScope(t, "m6")
	src := fixture(t, diamondYAML, diamondSQL())
	local, err := s.Render(src, t.TempDir(), RenderOptions{NetworkIDSuffix: "_local"})
	require.NoError(t, err)
	cloud, err := s.Render(src, t.TempDir(), RenderOptions{NetworkIDSuffix: "_cloud"})
	require.NoError(t, err)
	assert.Equal(t, s.ID()+"_m5_diamond_local", local.NetworkID)
	assert.Equal(t, s.ID()+"_m5_diamond_cloud", cloud.NetworkID)
	assert.Equal(t, "m5_diamond", local.FixtureNetworkID)
	assert.Equal(t, local.NodeIDs, cloud.NodeIDs)
	net, _ := readRendered(t, local.Path)
	assert.Equal(t, local.NetworkID, net.NetworkID)
}
