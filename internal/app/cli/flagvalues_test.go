package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A value a flag cannot take is refused naming the flag and the form it wants, with the value
// given, where the flag package said "parse error" (issue 43: `--step-timeout 5`).
func TestBadFlagValuesNameTheFlagAndTheForm(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"run --step-timeout 5", `flowtest run: --step-timeout: want a duration such as 90s, got "5"`},
		{"run --sandbox-read-latency slow", `flowtest run: --sandbox-read-latency: want a duration such as 90s, got "slow"`},
		{"run --repeat twice", `flowtest run: --repeat: want an integer such as 3, got "twice"`},
		{"run --dry-run=maybe", `flowtest run: --dry-run: want true or false (or the flag alone), got "maybe"`},
		{"check --tags @m5 --allow-empty=perhaps", `flowtest check: --allow-empty: want true or false (or the flag alone), got "perhaps"`},
		{"sweep --older-than soon", `flowtest sweep: --older-than: want a duration such as 90s, got "soon"`},
		{"rehearse --shards two", `flowtest rehearse: --shards: want an integer such as 3, got "two"`},
		{"rehearse --latency 5", `flowtest rehearse: --latency: want a duration such as 90s, got "5"`},
		{"defects --jobs all", `flowtest defects: --jobs: want an integer such as 3, got "all"`},
		{"explore m5-resume --time 5", `flowtest explore: --time: want a positive duration such as 10m, got "5"`},
		{"gate run release --step-timeout 2", `flowtest gate run: --step-timeout: want a duration such as 90s, got "2"`},
	} {
		t.Run(c.args, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(strings.Fields(c.args), nil, &out, &errb, nil)
			assert.Equal(t, 2, code, "refused: %s", errb.String())
			assert.Equal(t, c.want+"\n", errb.String(), "one line naming the flag, the form and the value")
		})
	}
}

// A good value still parses into the field the command reads.
func TestTypedFlagValuesParse(t *testing.T) {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f.bind(fs)
	assert.NoError(t, fs.Parse([]string{"--step-timeout", "90s", "--repeat", "3", "--sandbox-read-latency", "0"}))
	assert.Equal(t, "1m30s", f.stepTimeout.String())
	assert.Equal(t, 3, f.repeat)
	assert.Zero(t, f.readLatency)
	assert.Equal(t, "500ms", fs.Lookup("sandbox-read-latency").DefValue, "the default is the declaration's")
}
