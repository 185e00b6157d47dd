//go:build !defect_archive_unreadable_run_taken_as_archived

package defect

// ArchiveUnreadableRunTakenAsArchived is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveUnreadableRunTakenAsArchived = false
