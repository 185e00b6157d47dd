//go:build defect_cancel_requested_ignored

package defect

// CancelRequestedIgnored is planted: this binary was built with -tags defect_cancel_requested_ignored (see defects.yaml).
const CancelRequestedIgnored = true
