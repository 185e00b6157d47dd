package flownet

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expected texts are what kSQL-FlowNet 1.0.0's serializers print for the same inputs
// (its dist run under Node once, by hand): the summaries must match them byte for byte.
const (
	shaA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	shaB = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

	wantBaseline = `{"version":1,"kind":"KSQL_FLOWNET_INPUT_BASELINE","inputs":[{"source":"source","sha256":"` + shaA + `","bytes":42},{"source":"zeta","sha256":"` + shaB + `","bytes":7}]}`
	wantInput    = `{"version":1,"kind":"KSQL_FLOWNET_INPUT_AUDIT","baseline":[{"source":"source","sha256":"` + shaA + `","bytes":42},{"source":"zeta","sha256":"` + shaB + `","bytes":7}],"input_files":[{"source":"source","type":"IMPORT","sha256":"aaaaaaaaaaaa","bytes":42,"rows":3,"encoding":"SJIS"},{"source":"zeta","type":"IMPORT","sha256":"0123456789ab","bytes":7,"rows":1,"encoding":"UTF8"}]}`
	wantOutput   = `{"version":1,"kind":"KSQL_FLOWNET_OUTPUT_AUDIT","output_files":[{"sink":"report","type":"EXPORT","sha256":"` + shaB + `","bytes":10,"rows":3,"encoding":"utf8"}]}`
	wantIO       = `{"version":1,"kind":"KSQL_FLOWNET_IO_AUDIT","baseline":[{"source":"source","sha256":"` + shaA + `","bytes":42},{"source":"zeta","sha256":"` + shaB + `","bytes":7}],"input_files":[{"source":"source","type":"IMPORT","sha256":"aaaaaaaaaaaa","bytes":42,"rows":3,"encoding":"SJIS"},{"source":"zeta","type":"IMPORT","sha256":"0123456789ab","bytes":7,"rows":1,"encoding":"UTF8"}],"output_files":[{"sink":"report","type":"EXPORT","sha256":"` + shaB + `","bytes":10,"rows":3,"encoding":"utf8"}]}`
)

var (
	testIns  = []nodeInput{{Name: "zeta", Path: "/x", SHA256: shaB, Bytes: 7}, {Name: "source", Path: "/y", SHA256: shaA, Bytes: 42}}
	testRIn  = []fileReceipt{{Name: "zeta", SHA256: shaB, Bytes: 7, Rows: 1, Encoding: "UTF8"}, {Name: "source", SHA256: shaA, Bytes: 42, Rows: 3, Encoding: "SJIS"}}
	testROut = []fileReceipt{{Name: "report", SHA256: shaB, Bytes: 10, Rows: 3, Encoding: "utf8"}}
)

func TestIOSummariesAreTheProducts(t *testing.T) {
	got, err := inputBaselineSummary(testIns)
	require.NoError(t, err)
	assert.Equal(t, wantBaseline, got)
	got, err = inputAuditSummary(testIns, testRIn)
	require.NoError(t, err)
	assert.Equal(t, wantInput, got)
	got, err = outputAuditSummary(testROut)
	require.NoError(t, err)
	assert.Equal(t, wantOutput, got)
	got, err = ioAuditSummary(testIns, testRIn, testROut)
	require.NoError(t, err)
	assert.Equal(t, wantIO, got)
	got, err = outputAuditSummary(nil)
	require.NoError(t, err)
	assert.Equal(t, `{"version":1,"kind":"KSQL_FLOWNET_OUTPUT_AUDIT","output_files":[]}`, got)

	_, err = outputAuditSummary([]fileReceipt{{Name: "report", SHA256: shaB, Bytes: 1, Rows: 1, Encoding: "UTF8"}})
	assert.Error(t, err, "an output encoding is utf8 or sjis, in lower case")
	_, err = inputAuditSummary(testIns, []fileReceipt{{Name: "source", SHA256: shaA, Bytes: 42, Rows: 1, Encoding: "shift jis"}})
	assert.Error(t, err, "an input encoding is a token")
	long := []nodeInput{}
	for i := 0; i < 80; i++ {
		long = append(long, nodeInput{Name: strings.Repeat("n", 100) + string(rune('A'+i%26)) + string(rune('a'+i/26)), SHA256: shaA})
	}
	_, err = inputBaselineSummary(long)
	assert.ErrorIs(t, err, errSummaryTooBig, "a summary past 10,000 characters is refused")
}

func TestParseStoredBaseline(t *testing.T) {
	want := []baselineEntry{{"source", shaA, 42}, {"zeta", shaB, 7}}
	for _, s := range []string{wantBaseline, wantInput, wantIO} {
		got, ok, err := parseStoredBaseline(s)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, want, got)
		assert.True(t, baselinesEqual(got, testIns))
	}
	changed := []nodeInput{testIns[0], {Name: "source", SHA256: shaA, Bytes: 43}}
	assert.False(t, baselinesEqual(want, changed), "the bytes are part of the baseline")
	assert.False(t, baselinesEqual(want, testIns[:1]), "so is the set of sources")

	for _, s := range []string{"", "INPUT_FILE_MISSING: input source does not exist", wantOutput, `{"kind":"OTHER"}`, "null", "[1]"} {
		_, ok, err := parseStoredBaseline(s)
		assert.NoError(t, err, s)
		assert.False(t, ok, "%q is no baseline", s)
	}
	for _, s := range []string{
		strings.Replace(wantInput, `"version":1`, `"version":2`, 1),
		strings.Replace(wantInput, `"kind"`, `"first_rows":[],"kind"`, 1),
		strings.Replace(wantBaseline, `"bytes":42`, `"bytes":42,"rows":3`, 1),
		`{"version":1,"kind":"KSQL_FLOWNET_INPUT_BASELINE","inputs":[{"source":"zeta","sha256":"` + shaB + `","bytes":7},{"source":"source","sha256":"` + shaA + `","bytes":42}]}`,
		`{"version":1,"kind":"KSQL_FLOWNET_INPUT_BASELINE","inputs":null}`,
	} {
		_, ok, err := parseStoredBaseline(s)
		assert.Error(t, err, s)
		assert.True(t, ok, s)
	}
}

func TestReceiptRules(t *testing.T) {
	assert.True(t, receiptsConfirmBaseline(testIns, testRIn))
	assert.False(t, receiptsConfirmBaseline(testIns, testRIn[:1]), "a missing receipt")
	assert.False(t, receiptsConfirmBaseline(testIns[:1], testRIn), "an extra receipt")
	other := append([]fileReceipt{}, testRIn...)
	other[1].Bytes = 41
	assert.False(t, receiptsConfirmBaseline(testIns, other), "other bytes")

	outs := []nodeOutput{{Name: "report"}, {Name: "fresh"}}
	assert.True(t, receiptsNameSinks(outs, []fileReceipt{{Name: "fresh"}, {Name: "report"}}))
	assert.True(t, receiptsNameSinks(outs, nil), "a receipt list may leave a sink out")
	assert.False(t, receiptsNameSinks(outs, []fileReceipt{{Name: "report"}, {Name: "fresh"}}), "out of order")
	assert.False(t, receiptsNameSinks(outs, []fileReceipt{{Name: "other"}}), "an unconfigured sink")

	ok := `{"input_files":[{"name":"source","sha256":"` + shaA + `","bytes":1,"rows":1,"encoding":"UTF8","extra":1}],"output_files":[]}`
	assert.NoError(t, fileReceiptsInvalid([]byte(ok)), "an input receipt may carry more keys")
	for _, bad := range []string{
		`{"input_files":null}`,
		`{"output_files":[{"name":"r","sha256":"` + shaA + `","bytes":1,"rows":1,"encoding":"utf8","extra":1}]}`,
		`{"output_files":[{"name":"r","sha256":"` + shaA + `","bytes":1,"rows":1,"encoding":"UTF8"}]}`,
		`{"input_files":[{"name":"a:b","sha256":"` + shaA + `","bytes":1,"rows":1,"encoding":"UTF8"}]}`,
		`{"input_files":[{"name":"a","sha256":"` + shaA + `","bytes":1.5,"rows":1,"encoding":"UTF8"}]}`,
		`{"input_files":[{"name":"a","sha256":"` + shaA + `","bytes":null,"rows":1,"encoding":"UTF8"}]}`,
		`{"input_files":[{"name":"a","sha256":"` + shaA + `","bytes":1,"rows":1,"encoding":"UTF8"},{"name":"a","sha256":"` + shaA + `","bytes":1,"rows":1,"encoding":"UTF8"}]}`,
	} {
		assert.Error(t, fileReceiptsInvalid([]byte(bad)), bad)
	}
}
