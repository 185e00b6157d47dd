//go:build defect_extra_invocation

package defect

// ExtraInvocation is planted: this binary was built with -tags defect_extra_invocation (see defects.yaml).
const ExtraInvocation = true
