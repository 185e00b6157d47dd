//go:build defect_archive_principal_from_host

package defect

// ArchivePrincipalFromHost is planted: this binary was built with -tags defect_archive_principal_from_host (see defects.yaml).
const ArchivePrincipalFromHost = true
