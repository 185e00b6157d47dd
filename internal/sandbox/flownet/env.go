package flownet

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// cli is one command invocation: its environment (what a child process would see), its
// output streams and its clock. Main builds it from the process; tests build it directly so
// several FlowNet invocations can run in one test process with different environments.
type cli struct {
	environ        []string
	stdout, stderr io.Writer
	now            func() time.Time
	// pid is the process id used in the default owner instance (local-pid://<host>/<pid>).
	pid int
	// retryEvery/retryFor bound the control-plane transport retries (2 s, lease duration).
	retryEvery time.Duration
	// childDir is the working directory of kSQL-Flow children ("" = inherit ours, as the
	// product does; kSQL-Flow keeps its local lock .ksql/lock-<profile>.json there).
	childDir string
	// self is how to start this FlowNet CLI again (executable and leading arguments): the
	// poller's children (status, run-network, cancel-run, archive-run) are FlowNet commands.
	self []string
}

func newCLI(environ []string, stdout, stderr io.Writer) *cli {
	return &cli{environ: environ, stdout: stdout, stderr: stderr, now: time.Now, pid: os.Getpid(), retryEvery: 2 * time.Second}
}

// getenv returns the last value of name in the environment (as the OS does).
func (c *cli) getenv(name string) string {
	v := ""
	for _, kv := range c.environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// requireEnv returns the values of the named variables or one error naming every missing one.
func (c *cli) requireEnv(names ...string) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	for _, n := range names {
		v := strings.TrimSpace(c.getenv(n))
		if v == "" {
			missing = append(missing, n)
		}
		out[n] = v
	}
	if len(missing) > 0 {
		return nil, coded(codeConfigMissing, "required environment variable(s) not set: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// codeConfigMissing is our code for missing environment variables; the product's exact code
// is not documented (product-contract §12), so the name says what happened.
const codeConfigMissing = "CONFIG_MISSING"

// newStore builds the kintone store from KSQL_FLOWNET_BASE_URL, the state/audit app ids and
// tokens and, when withLog, the JOB-log app (read-only token). The emulator's CA is trusted
// through SSL_CERT_FILE on every OS.
func (c *cli) newStore(withLog bool, retryFor time.Duration) (*store, error) {
	names := []string{"KSQL_FLOWNET_BASE_URL", "KSQL_FLOWNET_STATE_APP_ID", "KSQL_FLOWNET_STATE_API_TOKEN",
		"KSQL_FLOWNET_AUDIT_APP_ID", "KSQL_FLOWNET_AUDIT_API_TOKEN"}
	if withLog {
		names = append(names, "KSQL_FLOW_LOG_APP_ID", "KSQL_FLOW_LOG_API_TOKEN")
	}
	e, err := c.requireEnv(names...)
	if err != nil {
		return nil, err
	}
	hc, err := kintoneapi.HTTPClientWithCA(c.getenv("SSL_CERT_FILE"))
	if err != nil {
		return nil, fmt.Errorf("kintone HTTP client: %w", err)
	}
	tokens := map[string]string{
		e["KSQL_FLOWNET_STATE_APP_ID"]: e["KSQL_FLOWNET_STATE_API_TOKEN"],
		e["KSQL_FLOWNET_AUDIT_APP_ID"]: e["KSQL_FLOWNET_AUDIT_API_TOKEN"],
	}
	st := &store{stateApp: e["KSQL_FLOWNET_STATE_APP_ID"], auditApp: e["KSQL_FLOWNET_AUDIT_APP_ID"],
		retryEvery: c.retryEvery, retryFor: retryFor}
	if withLog {
		st.logApp = e["KSQL_FLOW_LOG_APP_ID"]
		tokens[st.logApp] = e["KSQL_FLOW_LOG_API_TOKEN"]
	}
	st.net = watchTransport(hc)
	st.kc = kintoneapi.New(e["KSQL_FLOWNET_BASE_URL"], hc, tokens)
	return st, nil
}

func (c *cli) host() string {
	if h := strings.TrimSpace(c.getenv("KSQL_FLOWNET_HOST")); h != "" {
		return h
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
}

func (c *cli) requestedBy() string {
	for _, n := range []string{"KSQL_FLOWNET_REQUESTED_BY", "USERNAME"} {
		if v := strings.TrimSpace(c.getenv(n)); v != "" {
			return v
		}
	}
	return "unknown"
}

func (c *cli) ownerInstance() string {
	if v := strings.TrimSpace(c.getenv("KSQL_FLOWNET_OWNER_INSTANCE_ID")); v != "" {
		return v
	}
	return "local-pid://" + c.host() + "/" + strconv.Itoa(c.pid)
}

func (c *cli) graceful() time.Duration {
	if v := strings.TrimSpace(c.getenv("KSQL_FLOW_GRACE_PERIOD_MS")); v != "" {
		if ms, err := strconv.Atoi(v); err == nil && ms >= 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return 30 * time.Second
}
