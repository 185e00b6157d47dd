package cli

// What a run knows of secrets and the leak checks of what it wrote, shared by run, explore,
// evidence, merge and rehearse.

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/ksqlflow/flowtest/internal/harness/target"
	"github.com/ksqlflow/flowtest/internal/results"
	"github.com/ksqlflow/flowtest/internal/results/redact"
)

// secretsFor is every secret a run on tgt knows at its start: the environment's, the
// configuration's and the target's.
func (s *session) secretsFor(tgt *target.Target) map[string]string {
	secrets := redact.SecretsFromEnv(envMap(os.Environ()))
	for k, v := range s.cfg.Secrets() {
		secrets[k] = v
	}
	for k, v := range tgt.Secrets() {
		secrets[k] = v
	}
	return secrets
}

// leakFree scans a finished archive folder for secrets and raw app ids and says what it found.
func leakFree(w io.Writer, dir string, secrets map[string]string, appIDs []string) bool {
	leaks, err := redact.Verify(dir, secrets, appIDs)
	return reportLeaks(w, "archive verify", "archive leak", leaks, err)
}

// reportLeaks prints a leak scan's error or each leak under the given heads and says whether
// the scan found the files clean.
func reportLeaks[L any](w io.Writer, errHead, leakHead string, leaks []L, err error) bool {
	switch {
	case err != nil:
		fmt.Fprintf(w, "%s: %v\n", errHead, err)
		return false
	case len(leaks) > 0:
		for _, l := range leaks {
			fmt.Fprintf(w, "%s: %v\n", leakHead, l)
		}
		return false
	}
	return true
}

// filesLeakFree scans files written outside the archive (the --format files, an evidence
// table) the way leakFree scans an archive, and says what it found.
func filesLeakFree(w io.Writer, files []string, secrets map[string]string, appIDs []string) bool {
	if len(files) == 0 {
		return true
	}
	leaks, err := redact.VerifyFiles(files, secrets, appIDs)
	return reportLeaks(w, "leak check", "leak", leaks, err)
}

// runSecrets hands the steps the run's redactor: a value a scenario registers is redacted in
// every record written after that, and a secret is also among what the run's own archive
// check looks for at the end.
type runSecrets struct {
	red     *redact.Redactor
	mu      sync.Mutex
	secrets map[string]string // the map redact.Verify reads once every scenario has ended
}

func (r *runSecrets) AddReason(body string) { r.red.AddReason(body) }

func (r *runSecrets) AddSecret(name, value string) {
	r.mu.Lock()
	r.secrets[name] = value
	r.mu.Unlock()
	r.red.AddSecret(name, value)
}

func envMap(env []string) map[string]string {
	out := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// archiveWhole checks the archive this command just wrote the way `archive verify` will
// (results.CheckIntegrity), printing each problem: a run never reports on an archive that
// does not hold together.
func archiveWhole(stdout io.Writer, dir string) bool {
	probs := results.CheckIntegrity(dir)
	for _, p := range probs {
		fmt.Fprintf(stdout, "archive integrity: %s\n", p)
	}
	return len(probs) == 0
}

func (r *runSecrets) snapshot() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.secrets))
	for k, v := range r.secrets {
		out[k] = v
	}
	return out
}
