package flownet

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseRunArgs(t *testing.T) {
	o, problems := parseRunArgs([]string{"net.yaml", "--business-key", "k", "--resume", "--rerun-from", "n2", "--json"})
	assert.Empty(t, problems)
	assert.Equal(t, runOptions{network: "net.yaml", businessKey: "k", hasBusinessKey: true, resume: true, rerunFrom: "n2", json: true}, o)

	cases := map[string][]string{
		"--business-key was specified more than once":                                      {"n.yaml", "--business-key", "a", "--business-key", "b"},
		"--business-key requires a value":                                                  {"n.yaml", "--business-key", "--json"},
		"--resume-run cannot be combined with --resume, --scheduled-for or --business-key": {"n.yaml", "--resume-run", "r", "--resume"},
		"--rerun-from requires --resume or --resume-run":                                   {"n.yaml", "--rerun-from", "n1"},
		"exactly one <network> path is required":                                           {"a.yaml", "b.yaml"},
		"unknown option --force":                                                           {"n.yaml", "--force"},
	}
	for want, args := range cases {
		_, problems := parseRunArgs(args)
		assert.Contains(t, problems, want, "%v", args)
	}

	so, problems := parseStatusArgs([]string{"net", "--profile", "p", "--run-id", "r", "--json"})
	assert.Empty(t, problems)
	assert.Equal(t, statusOptions{networkID: "net", profile: "p", runID: "r", json: true}, so)
	_, problems = parseStatusArgs([]string{"net", "--run-id", "r", "--business-key", "k"})
	assert.Contains(t, problems, "--profile is required")
	assert.Contains(t, problems, "--run-id and --business-key cannot be combined")
}

func TestParseBinArgs(t *testing.T) {
	a, err := parseBinArgs(`["C:\\ksql flow\\dist\\cli.js", "--x"]`)
	assert.NoError(t, err)
	assert.Equal(t, []string{`C:\ksql flow\dist\cli.js`, "--x"}, a)
	a, err = parseBinArgs("  ksql-flow  --verbose ")
	assert.NoError(t, err)
	assert.Equal(t, []string{"ksql-flow", "--verbose"}, a)
	_, err = parseBinArgs("[broken")
	assert.Error(t, err)
}
