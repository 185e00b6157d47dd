//go:build defect_finalize_retry_drops_cancel_ignored

package defect

// FinalizeRetryDropsCancelIgnored is planted: this binary was built with -tags defect_finalize_retry_drops_cancel_ignored (see defects.yaml).
const FinalizeRetryDropsCancelIgnored = true
