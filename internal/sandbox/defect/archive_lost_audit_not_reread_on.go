//go:build defect_archive_lost_audit_not_reread

package defect

// ArchiveLostAuditNotReread is planted: this binary was built with -tags defect_archive_lost_audit_not_reread (see defects.yaml).
const ArchiveLostAuditNotReread = true
