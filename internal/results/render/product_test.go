package render

import (
	"html"
	"testing"

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
		require.Contains(t, string(page), "<b>Product: "+html.EscapeString(c.want)+"</b>")
	}
	require.NotContains(t, string(Readme(NewView(&record.Run{}, nil, nil))), "Product:")
}
