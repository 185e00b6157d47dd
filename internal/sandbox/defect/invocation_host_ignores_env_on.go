//go:build defect_invocation_host_ignores_env

package defect

// InvocationHostIgnoresEnv is planted: this binary was built with -tags defect_invocation_host_ignores_env (see defects.yaml).
const InvocationHostIgnoresEnv = true
