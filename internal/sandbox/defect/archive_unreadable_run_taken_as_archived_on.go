//go:build defect_archive_unreadable_run_taken_as_archived

package defect

// ArchiveUnreadableRunTakenAsArchived is planted: this binary was built with -tags defect_archive_unreadable_run_taken_as_archived (see defects.yaml).
const ArchiveUnreadableRunTakenAsArchived = true
