//go:build !defect_stale_request_reexecuted

package defect

// StaleRequestReexecuted is the correct behaviour (see defects.yaml for the planted bug).
const StaleRequestReexecuted = false
