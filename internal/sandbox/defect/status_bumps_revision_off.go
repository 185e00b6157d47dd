//go:build !defect_status_bumps_revision

package defect

// StatusBumpsRevision is the correct behaviour (see defects.yaml for the planted bug).
const StatusBumpsRevision = false
