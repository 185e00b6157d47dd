//go:build defect_poller_read_error_swallowed

package defect

// PollerReadErrorSwallowed is planted: this binary was built with -tags defect_poller_read_error_swallowed (see defects.yaml).
const PollerReadErrorSwallowed = true
