package cli

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// redactingWriter passes every console write through the archive's redactor, so the console
// shows what the archive shows: no token, no real app id (replaced by its role), no request
// reason body. Writes are redacted one call at a time (the console writes whole lines).
type redactingWriter struct {
	mu  sync.Mutex
	w   io.Writer
	red *redact.Redactor
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.w.Write(r.red.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func redactConsole(w io.Writer, red *redact.Redactor) io.Writer {
	return &redactingWriter{w: w, red: red}
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
