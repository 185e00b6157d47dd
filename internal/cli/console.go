package cli

import (
	"io"
	"os"
	"sync"

	"github.com/ksqlflow/flowtest/results/redact"
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
func (s *session) consoleRedactor() *redact.Redactor {
	secrets := redact.SecretsFromEnv(envMap(os.Environ()))
	for k, v := range s.cfg.Secrets() {
		secrets[k] = v
	}
	apps := map[string]string{}
	for role, a := range s.cfg.LiveApps() {
		apps[a.ID] = string(role)
	}
	return redact.New(secrets, apps)
}
