//go:build !defect_extra_invocation

package defect

// ExtraInvocation is the correct behaviour (see defects.yaml for the planted bug).
const ExtraInvocation = false
