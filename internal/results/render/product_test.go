package render

import (
	"html"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// The record says which FlowNet ran: a reference run is marked as flowtest's model, a real
// one names its package, version and Node.
func TestRecordNamesTheProduct(t *testing.T) {
	for _, c := range []struct {
		product *record.Product
		want    string
	}{
		{&record.Product{Kind: record.ProductReference, Source: "sandbox"}, "reference FlowNet (flowtest's model, not the product)"},
		{&record.Product{Kind: record.ProductReal, Source: "pinned", Package: "@rex0220/ksql-flownet", Version: "1.0.0", Node: "22.23.5"}, "@rex0220/ksql-flownet@1.0.0 (pinned, node 22.23.5)"},
	} {
		v := NewView(&record.Run{Product: c.product}, nil, nil)
		require.Contains(t, string(Readme(v)), "- Product: **"+c.want+"**")
		page, err := Index(v)
		require.NoError(t, err)
		require.Contains(t, string(page), html.EscapeString(c.want))
	}
	require.NotContains(t, string(Readme(NewView(&record.Run{}, nil, nil))), "Product:")
}

// The two cautions of a run show in README.md and index.html alike, and only when they hold:
// a run of the reference tested flowtest's model, and a run without a SUT commit cannot name
// the product it tested.
func TestRecordCautions(t *testing.T) {
	reference := &record.Product{Kind: record.ProductReference, Source: "sandbox"}
	real := &record.Product{Kind: record.ProductReal, Source: "pinned", Package: "p", Version: "1"}
	for _, c := range []struct {
		name                string
		product             *record.Product
		commit              string
		sandbox, sutUnknown bool
	}{
		{"reference, no commit", reference, "", true, true},
		{"reference, commit", reference, "c1c1", true, false},
		{"real, no commit", real, "", false, true},
		{"real, commit", real, "c1c1", false, false},
		{"no product recorded", nil, "c1c1", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := NewView(&record.Run{Product: c.product, SUT: record.SUTIdentity{Commit: c.commit}}, nil, nil)
			readme := string(Readme(v))
			page, err := Index(v)
			require.NoError(t, err)
			assert.Equal(t, c.sandbox, contains(readme, "- **"+sandboxBanner+"**"), "README sandbox banner")
			assert.Equal(t, c.sandbox, contains(string(page), "<b>"+sandboxBanner+"</b>"), "index.html sandbox banner")
			assert.Equal(t, c.sutUnknown, contains(readme, "- **"+sutUnknownBanner+"**"), "README SUT banner")
			assert.Equal(t, c.sutUnknown, contains(string(page), "<b>"+sutUnknownBanner+"</b>"), "index.html SUT banner")
		})
	}
}

// The header names the flowtest build and the features digest when the run recorded them.
func TestRecordNamesTheBuildAndDigest(t *testing.T) {
	digest := "sha256:" + strings64("ab")
	for _, c := range []struct {
		build *record.FlowtestBuild
		want  string
	}{
		{&record.FlowtestBuild{Version: "1.2.0", Commit: "0123abcd"}, "1.2.0, commit 0123abcd"},
		{&record.FlowtestBuild{Version: "1.2.0", Commit: "0123abcd", Modified: true}, "1.2.0, commit 0123abcd with uncommitted changes"},
		{&record.FlowtestBuild{Version: "1.2.0"}, "1.2.0, commit unknown"},
	} {
		v := NewView(&record.Run{Flowtest: c.build, FeaturesDigest: digest}, nil, nil)
		assert.Contains(t, string(Readme(v)), "- flowtest: "+c.want+"\n- Features digest: `"+digest+"`\n")
		page, err := Index(v)
		require.NoError(t, err)
		assert.Contains(t, string(page), `<p class="muted">flowtest `+c.want+` · features <code>`+digest+`</code></p>`)
	}
	v := NewView(&record.Run{}, nil, nil)
	assert.NotContains(t, string(Readme(v)), "flowtest:")
	assert.NotContains(t, string(Readme(v)), "Features digest")
	page, err := Index(v)
	require.NoError(t, err)
	assert.NotContains(t, string(page), "features <code>")
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func strings64(pair string) string { return strings.Repeat(pair, 32) }
