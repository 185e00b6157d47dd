//go:build defect_requested_by_without_creator

package defect

// RequestedByWithoutCreator is planted: this binary was built with -tags defect_requested_by_without_creator (see defects.yaml).
const RequestedByWithoutCreator = true
