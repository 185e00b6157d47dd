//go:build !defect_archive_retry_unbounded

package defect

// ArchiveRetryUnbounded is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveRetryUnbounded = false
