//go:build !defect_archive_audit_without_fence

package defect

// ArchiveAuditWithoutFence is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveAuditWithoutFence = false
