//go:build defect_scheduled_period_in_utc

package defect

// ScheduledPeriodInUtc is planted: this binary was built with -tags defect_scheduled_period_in_utc (see defects.yaml).
const ScheduledPeriodInUtc = true
