//go:build !defect_archive_lost_audit_not_reread

package defect

// ArchiveLostAuditNotReread is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveLostAuditNotReread = false
