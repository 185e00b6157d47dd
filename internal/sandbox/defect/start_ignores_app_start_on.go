//go:build defect_start_ignores_app_start

package defect

// StartIgnoresAppStart is planted: this binary was built with -tags defect_start_ignores_app_start (see defects.yaml).
const StartIgnoresAppStart = true
