//go:build defect_stale_request_reexecuted

package defect

// StaleRequestReexecuted is planted: this binary was built with -tags defect_stale_request_reexecuted (see defects.yaml).
const StaleRequestReexecuted = true
