//go:build defect_archive_retry_unbounded

package defect

// ArchiveRetryUnbounded is planted: this binary was built with -tags defect_archive_retry_unbounded (see defects.yaml).
const ArchiveRetryUnbounded = true
