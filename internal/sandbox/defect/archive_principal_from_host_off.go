//go:build !defect_archive_principal_from_host

package defect

// ArchivePrincipalFromHost is the correct behaviour (see defects.yaml for the planted bug).
const ArchivePrincipalFromHost = false
