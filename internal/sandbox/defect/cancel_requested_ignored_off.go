//go:build !defect_cancel_requested_ignored

package defect

// CancelRequestedIgnored is the correct behaviour (see defects.yaml for the planted bug).
const CancelRequestedIgnored = false
