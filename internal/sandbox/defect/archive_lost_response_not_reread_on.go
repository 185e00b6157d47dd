//go:build defect_archive_lost_response_not_reread

package defect

// ArchiveLostResponseNotReread is planted: this binary was built with -tags defect_archive_lost_response_not_reread (see defects.yaml).
const ArchiveLostResponseNotReread = true
