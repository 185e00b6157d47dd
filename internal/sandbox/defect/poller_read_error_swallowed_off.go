//go:build !defect_poller_read_error_swallowed

package defect

// PollerReadErrorSwallowed is the correct behaviour (see defects.yaml for the planted bug).
const PollerReadErrorSwallowed = false
