//go:build defect_status_bumps_revision

package defect

// StatusBumpsRevision is planted: this binary was built with -tags defect_status_bumps_revision (see defects.yaml).
const StatusBumpsRevision = true
