package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/steps"
)

// The README's command list is the command table's: between its markers it holds exactly
// what writeReadmeCommands prints.
func TestReadmeCommandListIsTheTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	const begin, end = "<!-- commands: from internal/cli's command table -->\n", "<!-- /commands -->"
	_, rest, ok := strings.Cut(string(data), begin)
	require.True(t, ok, "README.md has no %q marker", begin)
	list, _, ok := strings.Cut(rest, end)
	require.True(t, ok, "README.md has no %q marker", end)
	var want bytes.Buffer
	writeReadmeCommands(&want)
	assert.Equal(t, want.String(), list, "README.md's command list differs from the table: paste the expected text between the markers")
}

// help lists every visible command of the table; each command's -h starts with its usage
// line; a two-word group without its second word names its sub-commands.
func TestHelpAndDashHComeFromTheTable(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main([]string{"help"}, nil, &out, &errb, nil))
	for _, c := range commands {
		if c.hidden {
			assert.NotContains(t, out.String(), c.name, "hidden command listed")
			continue
		}
		assert.Contains(t, out.String(), "  "+c.name+" ", "help lists %s", c.name)
	}
	for _, c := range commands {
		if c.hidden || c.name == "version" || c.name == "help" {
			continue
		}
		var o, e bytes.Buffer
		code := Main(append(strings.Fields(c.name), "-h"), nil, &o, &e, nil)
		assert.Equal(t, 0, code, "%s -h", c.name)
		assert.True(t, strings.HasPrefix(e.String(), "usage: flowtest "+c.usage+"\n"), "%s -h starts with its usage line, got:\n%s", c.name, e.String())
	}
	var o, e bytes.Buffer
	assert.Equal(t, 2, Main([]string{"archive"}, nil, &o, &e, nil))
	assert.Contains(t, e.String(), "verify, pack, merge")
}

func TestKsqlWrapIsNotInTheUsage(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Main([]string{"help"}, nil, &out, &errb, nil))
	assert.NotContains(t, out.String(), steps.KsqlFlowWrapperCommand)
}
