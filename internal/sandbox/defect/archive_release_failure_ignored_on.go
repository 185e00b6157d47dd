//go:build defect_archive_release_failure_ignored

package defect

// ArchiveReleaseFailureIgnored is planted: this binary was built with -tags defect_archive_release_failure_ignored (see defects.yaml).
const ArchiveReleaseFailureIgnored = true
