//go:build defect_archive_audit_without_fence

package defect

// ArchiveAuditWithoutFence is planted: this binary was built with -tags defect_archive_audit_without_fence (see defects.yaml).
const ArchiveAuditWithoutFence = true
