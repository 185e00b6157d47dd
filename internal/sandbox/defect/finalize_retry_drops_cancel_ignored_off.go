//go:build !defect_finalize_retry_drops_cancel_ignored

package defect

// FinalizeRetryDropsCancelIgnored is the correct behaviour (see defects.yaml for the planted bug).
const FinalizeRetryDropsCancelIgnored = false
