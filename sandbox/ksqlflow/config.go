package ksqlflow

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// Config is the kSQL-Flow configuration file (JSON; format in doc.go).
type Config struct {
	FormatVersion int                 `json:"formatVersion"`
	Profiles      map[string]*Profile `json:"profiles"`
}

// Profile is one connection profile.
type Profile struct {
	BaseURL       string            `json:"baseUrl"`
	GuestSpaceID  *string           `json:"guestSpaceId,omitempty"`
	Timezone      *string           `json:"timezone"`
	CAFile        string            `json:"caFile,omitempty"`
	Apps          map[string]AppRef `json:"apps"`
	LogApp        *LogAppRef        `json:"logApp"`
	Limits        Limits            `json:"limits"`
	Retry         Retry             `json:"retry"`
	HTTPTimeoutMs int               `json:"httpTimeoutMs"`
}

// AppRef is a logical app: its kintone app id and its token reference (`env:NAME`).
type AppRef struct {
	AppID string `json:"appId"`
	Token string `json:"token"`
}

// LogAppRef is the JOB log app.
type LogAppRef struct {
	Name  string `json:"name"`
	AppID string `json:"appId"`
	Token string `json:"token"`
}

// Limits are the execution limits of a profile.
type Limits struct {
	MaxAPICalls     int `json:"maxApiCalls"`
	MaxReadRows     int `json:"maxReadRows"`
	MaxTempRows     int `json:"maxTempRows"`
	BatchTimeoutSec int `json:"batchTimeoutSec"`
}

// Retry is reported by describe-profile and is how the kintone client answers 429 (sent
// again up to maxAttempts times in all, kintoneapi.Retry); any other failed read fails the
// job, which is the fail-closed reading of the contract.
type Retry struct {
	MaxAttempts       int  `json:"maxAttempts"`
	InitialDelayMs    int  `json:"initialDelayMs"`
	MaxDelayMs        int  `json:"maxDelayMs"`
	RespectRetryAfter bool `json:"respectRetryAfter"`
}

// Defaults applied to zero values.
var defaultLimits = Limits{MaxAPICalls: 10000, MaxReadRows: 1000000, MaxTempRows: 1000000, BatchTimeoutSec: 3600}

const defaultHTTPTimeoutMs = 60000

// LoadConfig reads the file and picks the profile, filling defaults and checking what every
// subcommand needs (base URL, app ids, token references).
func LoadConfig(path, profile string) (*Profile, error) {
	if path == "" {
		return nil, fmt.Errorf("--config is required")
	}
	if profile == "" {
		return nil, fmt.Errorf("--profile is required")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("parse config %s: %w", path, err)
	}
	if c.FormatVersion != 1 {
		return nil, fmt.Errorf("config %s: formatVersion must be 1, got %d", path, c.FormatVersion)
	}
	p, ok := c.Profiles[profile]
	if !ok || p == nil {
		return nil, fmt.Errorf("config %s: profile %q not found", path, profile)
	}
	if err := validProfileName(profile); err != nil {
		return nil, err
	}
	p.BaseURL = strings.TrimRight(p.BaseURL, "/")
	if !strings.HasPrefix(p.BaseURL, "https://") && !strings.HasPrefix(p.BaseURL, "http://") {
		return nil, fmt.Errorf("profile %q: baseUrl %q must be an http(s) URL", profile, p.BaseURL)
	}
	if p.Timezone != nil {
		if _, err := time.LoadLocation(*p.Timezone); err != nil {
			return nil, fmt.Errorf("profile %q: timezone %q: %w", profile, *p.Timezone, err)
		}
	}
	for name, a := range p.Apps {
		if a.AppID == "" {
			return nil, fmt.Errorf("profile %q: app %q has no appId", profile, name)
		}
		if err := checkTokenRef(a.Token); err != nil {
			return nil, fmt.Errorf("profile %q: app %q: %w", profile, name, err)
		}
	}
	if p.LogApp != nil {
		if p.LogApp.AppID == "" {
			return nil, fmt.Errorf("profile %q: logApp has no appId", profile)
		}
		if err := checkTokenRef(p.LogApp.Token); err != nil {
			return nil, fmt.Errorf("profile %q: logApp: %w", profile, err)
		}
	}
	if p.Limits.MaxAPICalls <= 0 {
		p.Limits.MaxAPICalls = defaultLimits.MaxAPICalls
	}
	if p.Limits.MaxReadRows <= 0 {
		p.Limits.MaxReadRows = defaultLimits.MaxReadRows
	}
	if p.Limits.MaxTempRows <= 0 {
		p.Limits.MaxTempRows = defaultLimits.MaxTempRows
	}
	if p.Limits.BatchTimeoutSec <= 0 {
		p.Limits.BatchTimeoutSec = defaultLimits.BatchTimeoutSec
	}
	if p.HTTPTimeoutMs <= 0 {
		p.HTTPTimeoutMs = defaultHTTPTimeoutMs
	}
	if p.Retry.MaxAttempts <= 0 {
		p.Retry = Retry{MaxAttempts: 1, InitialDelayMs: 0, MaxDelayMs: 0, RespectRetryAfter: true}
	}
	return p, nil
}

// checkTokenRef accepts only `env:NAME`: a token literal in a file would end up in archives.
func checkTokenRef(ref string) error {
	name, ok := strings.CutPrefix(ref, "env:")
	if !ok || name == "" {
		return fmt.Errorf("token must be an env:NAME reference (token literals are refused)")
	}
	return nil
}

// resolveToken reads the variable named by an `env:NAME` reference.
func resolveToken(ref string) (string, error) {
	name := strings.TrimPrefix(ref, "env:")
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("token variable %s is not set", name)
	}
	return v, nil
}

// validProfileName applies the identifier rule of the job key: no ':' (separator), no NUL.
func validProfileName(p string) error {
	if p == "" || strings.ContainsAny(p, ":\x00") || len([]rune(p)) > 128 {
		return fmt.Errorf("profile %q: must be 1–128 characters without ':' or NUL", p)
	}
	return nil
}

// location returns the profile's timezone (UTC when unset).
func (p *Profile) location() *time.Location {
	if p.Timezone == nil {
		return time.UTC
	}
	loc, err := time.LoadLocation(*p.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// appIDs maps logical name -> app id (for static checks and describe-profile).
func (p *Profile) appIDs() map[string]string {
	out := make(map[string]string, len(p.Apps))
	for k, v := range p.Apps {
		out[k] = v.AppID
	}
	return out
}
