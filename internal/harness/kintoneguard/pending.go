package kintoneguard

import (
	"context"
	"fmt"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
	"github.com/ksqlflow/flowtest/internal/safety"
)

// PendingReader implements safety.PendingReader over a kintone client that
// holds the request app's read-only token.
type PendingReader struct {
	API *kintoneapi.Client
}

var _ safety.PendingReader = PendingReader{}

// PendingRequests lists the REQUESTED/ACCEPTED records (request_state is a
// drop-down: queried with `in`, as kintone requires).
func (p PendingReader) PendingRequests(ctx context.Context, app string) ([]safety.PendingRequest, error) {
	recs, err := p.API.GetAll(ctx, app, `request_state in ("REQUESTED", "ACCEPTED")`, []string{"$id", "request_state"})
	if err != nil {
		return nil, fmt.Errorf("list pending requests: %w", err)
	}
	out := make([]safety.PendingRequest, 0, len(recs))
	for _, r := range recs {
		out = append(out, safety.PendingRequest{ID: r.ID(), State: r.Str("request_state")})
	}
	return out, nil
}
