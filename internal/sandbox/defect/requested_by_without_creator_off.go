//go:build !defect_requested_by_without_creator

package defect

// RequestedByWithoutCreator is the correct behaviour (see defects.yaml for the planted bug).
const RequestedByWithoutCreator = false
