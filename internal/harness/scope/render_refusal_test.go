package scope

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Malformed fixtures are refused with the file and the line, on one line.
func TestRenderErrorsNameTheLine(t *testing.T) {
	okSQL := map[string]string{"j.sql": "-- @ksql name: j\nSELECT 1;\n"}
	head := "schema_version: 1\nnetwork_id: n\n"
	cases := []struct {
		name, yaml string
		sql        map[string]string
		want       string // after "<src>"
	}{
		{"yaml syntax", head + "nodes:\n  - {id: a, job_id: j\n", okSQL, `:4: parse YAML: did not find expected ',' or '}'`},
		{"tab", head + "nodes:\n\t- id: a\n", okSQL, ":4: parse YAML: found character that cannot start any token"},
		{"empty file", "", okSQL, ": empty file"},
		{"second document", head + "nodes:\n  - {id: a, job_id: j, sql: ../jobs/j.sql}\n---\nschema_version: 1\n", okSQL, ":5: a second YAML document"},
		{"schema version", "schema_version: 2\nnetwork_id: n\n", okSQL, ":1: schema_version must be 1"},
		{"duplicate key", head + "network_id: m\n", okSQL, `:3: network: duplicate key "network_id" (first at line 2)`},
		{"no nodes", head + "nodes: []\n", okSQL, ":3: nodes must be a non-empty list"},
		{"node not a mapping", head + "nodes:\n  - a\n", okSQL, ":4: nodes[0] is not a mapping"},
		{"missing job id", head + "nodes:\n  - id: a\n    sql: ../jobs/j.sql\n", okSQL, `:4: node "a": missing job_id`},
		{"empty id", head + "nodes:\n  - id: \"\"\n", okSQL, ":4: nodes[0]: id must be a non-empty string"},
		{"duplicate node id", head + "nodes:\n  - {id: a, job_id: j, sql: ../jobs/j.sql}\n  - {id: a, job_id: j, sql: ../jobs/j.sql}\n", okSQL, `:5: duplicate node id "a"`},
		{"depends_on not a list", head + "nodes:\n  - id: a\n    job_id: j\n    sql: ../jobs/j.sql\n    depends_on: a\n", okSQL, `:7: node "a": depends_on must be a list`},
		{"missing sql file", head + "nodes:\n  - id: a\n    job_id: j\n    sql: ../jobs/none.sql\n", okSQL, ":6: sql "},
		{"sql second header", head + "nodes:\n  - {id: a, job_id: j, sql: ../jobs/j.sql}\n", map[string]string{"j.sql": "-- @ksql name: j\n-- x\n-- @ksql name: j\n"}, "j.sql:3: a second `-- @ksql name:` header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScope(t, "m5")
			src := fixture(t, c.yaml, c.sql)
			_, err := s.Render(src, t.TempDir(), RenderOptions{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), "render "+src), err.Error())
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}
