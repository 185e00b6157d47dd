package cli

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// consoleWriter passes every console write through edit, one call at a time (the console
// writes whole lines), serialised.
type consoleWriter struct {
	mu   sync.Mutex
	w    io.Writer
	edit func([]byte) []byte
}

func (c *consoleWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.w.Write(c.edit(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redactConsole is w through the archive's redactor, so the console shows what the archive
// shows: no token, no real app id (replaced by its role), no request reason body.
func redactConsole(w io.Writer, red *redact.Redactor) io.Writer {
	return &consoleWriter{w: w, edit: red.Bytes}
}

// consoleRedactor is the redactor of the configuration known before a target is resolved:
// every secret of the environment and configuration, and the configured live app ids by role.
// A variable named like a secret whose value is not one (redact.NotSecret) is named on warn,
// once per command, so the operator learns it is not redacted (its value is never printed).
func (s *session) consoleRedactor(warn io.Writer, command string) *redact.Redactor {
	secrets := redact.SecretsFromEnv(envMap(os.Environ()))
	for k, v := range s.cfg.Secrets() {
		secrets[k] = v
	}
	apps := map[string]string{}
	for role, a := range s.cfg.LiveApps() {
		apps[a.ID] = string(role)
	}
	red := redact.New(secrets, apps)
	for _, w := range red.Warnings() {
		fmt.Fprintf(warn, "flowtest %s: warning: %s\n", command, w)
	}
	return red
}
