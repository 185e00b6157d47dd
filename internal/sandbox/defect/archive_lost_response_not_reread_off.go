//go:build !defect_archive_lost_response_not_reread

package defect

// ArchiveLostResponseNotReread is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveLostResponseNotReread = false
