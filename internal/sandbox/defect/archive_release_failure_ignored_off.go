//go:build !defect_archive_release_failure_ignored

package defect

// ArchiveReleaseFailureIgnored is the correct behaviour (see defects.yaml for the planted bug).
const ArchiveReleaseFailureIgnored = false
