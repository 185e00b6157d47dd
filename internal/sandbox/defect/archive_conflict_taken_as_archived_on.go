//go:build defect_archive_conflict_taken_as_archived

package defect

// ArchiveConflictTakenAsArchived is planted: this binary was built with -tags defect_archive_conflict_taken_as_archived (see defects.yaml).
const ArchiveConflictTakenAsArchived = true
