package kintoneapi

import (
	"strings"
	"time"
)

// ParseDateTime parses a kintone DATETIME value ("2026-12-01T03:38:00Z"); zero when empty or
// malformed. The preflight's activity rule and the run's timeline both read record times.
func ParseDateTime(v string) time.Time {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
