//go:build !defect_archive_conflict_taken_as_archived

package defect

// ArchiveConflictTakenAsArchived is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveConflictTakenAsArchived = false
