package results

import (
	"html"
	"testing"

	"github.com/stretchr/testify/require"
)

// The record says which FlowNet ran: a reference run is marked as flowtest's model, a real
// one names its package, version and Node.
func TestRecordNamesTheProduct(t *testing.T) {
	for _, c := range []struct {
		product *Product
		want    string
	}{
		{&Product{Kind: ProductReference, Source: "sandbox"}, "reference FlowNet (flowtest's model, not the product)"},
		{&Product{Kind: ProductReal, Source: "pinned", Package: "@rex0220/ksql-flownet", Version: "1.0.0", Node: "22.23.5"}, "@rex0220/ksql-flownet@1.0.0 (pinned, node 22.23.5)"},
	} {
		v := newRunView(&Run{Product: c.product}, nil, nil)
		require.Contains(t, string(renderReadme(v)), "- Product: **"+c.want+"**")
		require.Contains(t, string(renderIndex(v)), "<b>Product: "+html.EscapeString(c.want)+"</b>")
	}
	require.NotContains(t, string(renderReadme(newRunView(&Run{}, nil, nil))), "Product:")
}
