package redact

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// NDJSON stays one document a line (Bytes would indent the stream as one JSON text), and a
// secret in a line is redacted as JSON redacts it.
func TestNDJSONKeepsOneDocumentALine(t *testing.T) {
	const token = "Zm9vYmFyLXRva2VuLTAxMjM0NTY3ODk"
	r := New(map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": token}, nil)
	in := "{\"meta\":{\"protocolVersion\":\"34.2.0\"}}\n\n{\"testStepFinished\":{\"testStepResult\":{\"message\":\"token " + token + " refused\"}}}\n"
	out, err := r.NDJSON([]byte(in))
	require.NoError(t, err)
	lines := strings.Split(string(out), "\n")
	require.Len(t, lines, 4, "%q", out)
	assert.Equal(t, `{"meta":{"protocolVersion":"34.2.0"}}`, lines[0])
	assert.Empty(t, lines[1])
	assert.Equal(t, `{"testStepFinished":{"testStepResult":{"message":"token [REDACTED:KSQL_FLOWNET_STATE_API_TOKEN] refused"}}}`, lines[2])

	_, err = r.NDJSON([]byte("{\"a\":1}\n{\n"))
	assert.ErrorContains(t, err, "line 2")
}

// Bytes, which redacts files flowtest did not compose (godog's --format output), keeps a
// stream of JSON documents (godog's events formatter writes NDJSON) one document a line.
func TestBytesKeepsAJSONStreamOneDocumentALine(t *testing.T) {
	const token = "Zm9vYmFyLXRva2VuLTAxMjM0NTY3ODk"
	r := New(map[string]string{"KSQL_FLOWNET_STATE_API_TOKEN": token}, nil)
	in := "{\"event\":\"TestRunStarted\",\"token\":\"x\"}\n{\"event\":\"StepDefinitionFound\",\"message\":\"token " + token + "\"}\n"
	out := string(r.Bytes([]byte(in)))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 2, "%q", out)
	assert.NotContains(t, out, token)
	for _, l := range lines {
		assert.True(t, strings.HasPrefix(l, "{") && strings.HasSuffix(l, "}"), l)
	}
}
