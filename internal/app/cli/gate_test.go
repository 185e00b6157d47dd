package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A malformed gate definition through the command: exit 2 and the file:line on stderr.
func TestGateShowRefusesABadDefinition(t *testing.T) {
	head := "schema_version: 1\nname: g\n"
	file := filepath.Join(t.TempDir(), "g.yaml")
	require.NoError(t, os.WriteFile(file, []byte(head+"required: \"@m9-nope\"\n"), 0o644))
	r := flowtest(t, nil, "gate", "show", file)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "g.yaml:3: required: unknown scenario id or series @m9-nope")
}

func TestGateShowListsTheScopeInRunOrder(t *testing.T) {
	r := flowtest(t, nil, "gate", "show", "r2")
	require.Equal(t, 0, r.code, r.stderr)
	ids := strings.Fields(r.stdout)
	require.Len(t, ids, 18)
	assert.Equal(t, "m5-serial-success", ids[0])
	assert.Equal(t, "m6-01-resume-identity", ids[1])
	assert.Equal(t, "p2-16-02-cancel-claim-race", ids[17], "manifest order, not file order")
	assert.Contains(t, r.stderr, "carry-over csv1")

	all := flowtest(t, nil, "gate", "show", "--all", "r2")
	require.Equal(t, 0, all.code, all.stderr)
	assert.Len(t, strings.Fields(all.stdout), 26, "18 required + CSV1 4 + CSV2 4")
}
