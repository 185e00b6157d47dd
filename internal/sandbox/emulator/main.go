package emulator

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

const usage = `usage: flowsandbox kintone serve [flags]

Serves the kintone REST emulator until SIGINT/SIGTERM. The first stdout line is one JSON
object: {"base_url", "ca_file", "apps": [{"role","name","id","tokens":{set: token}}]},
printed once the --env-out and --operator-env files are written.

flags:
  --addr host:port      listen address (default 127.0.0.1:0)
  --data-dir dir        load records on start, save them on shutdown
  --env-out file        also write base URL, CA file, app ids and tokens as an env file
  --operator-env dir    also write an operator's live setup for this emulator into dir, as
                        docs/live.md makes it for a real tenant: .env (E2E app ids,
                        read-only tokens, launchers = this flowsandbox), tokens.sh (the
                        writable tokens, narrowest per role), ksql-flow-config.json, a deny
                        list; for rehearsing flowtest run --target live (flowtest rehearse)
  --latency role=dur    fixed delay per request on an app (repeatable, or comma-separated)
  --race-da02           racing revision-checked updates fail with 400 GAIA_DA02
  --concurrency-limit n requests in flight before the next gets 429 GAIA_TO04 (default 100,
                        kintone's per-domain limit)
  --daily-request-limit n
                        kintone's per-app daily request limit (10000 standard plan); past it
                        one warning line per app and day on stderr (kintone e-mails a
                        warning and keeps serving, so does the emulator); default 0: none
  --plain-http          serve http:// (real kintone is https-only; default is https)
  --exit-on-stdin-eof   shut down when stdin reaches end of file: started with a pipe from its
                        parent as stdin, the emulator ends with the parent however the parent
                        ends (flowtest gives it one)
`

// Main is the entry point of "flowsandbox kintone …".
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, args[1:], stdout, stderr)
}

// stdin is what --exit-on-stdin-eof watches (a test replaces it).
var stdin io.Reader = os.Stdin

// latencyFlag collects role=duration pairs.
type latencyFlag map[string]time.Duration

func (l latencyFlag) String() string { return fmt.Sprint(map[string]time.Duration(l)) }

func (l latencyFlag) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		role, d, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("want role=duration, got %q", part)
		}
		dur, err := time.ParseDuration(d)
		if err != nil || dur < 0 {
			return fmt.Errorf("latency for %s: bad duration %q", role, d)
		}
		l[role] = dur
	}
	return nil
}

// serve runs until ctx ends (a signal), then shuts down gracefully (saving the data dir).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("flowsandbox kintone serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, usage) }
	var opts Options
	lat := latencyFlag{}
	var envOut, operatorDir string
	fl.StringVar(&opts.Addr, "addr", "127.0.0.1:0", "listen address")
	fl.StringVar(&opts.DataDir, "data-dir", "", "data directory")
	fl.StringVar(&envOut, "env-out", "", "env file to write")
	fl.StringVar(&operatorDir, "operator-env", "", "directory to write an operator's live setup into")
	fl.Var(lat, "latency", "role=duration")
	fl.BoolVar(&opts.RaceDA02, "race-da02", false, "GAIA_DA02 for racing updates")
	fl.BoolVar(&opts.PlainHTTP, "plain-http", false, "serve http")
	fl.IntVar(&opts.ConcurrencyLimit, "concurrency-limit", defaultConcurrencyLimit, "requests in flight before 429 GAIA_TO04")
	fl.Int64Var(&opts.DailyRequestLimit, "daily-request-limit", 0, "per-app daily request limit (0: none)")
	exitOnEOF := fl.Bool("exit-on-stdin-eof", false, "shut down when stdin reaches end of file")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *exitOnEOF {
		// The parent holds the only write end of our stdin: end of file means it is gone,
		// even when it was killed and could not stop us.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			fmt.Fprintln(stderr, "flowsandbox kintone serve: stdin closed: the parent is gone")
			cancel()
		}()
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "flowsandbox kintone serve: unexpected arguments %q\n", fl.Args())
		return 2
	}
	if opts.ConcurrencyLimit < 1 || opts.DailyRequestLimit < 0 {
		fmt.Fprintln(stderr, "flowsandbox kintone serve: --concurrency-limit must be at least 1 and --daily-request-limit at least 0")
		return 2
	}
	opts.Warnings = stderr
	if operatorDir != "" && opts.PlainHTTP {
		fmt.Fprintln(stderr, "flowsandbox kintone serve: --operator-env needs https (live mode refuses http): drop --plain-http")
		return 2
	}
	opts.Latency = lat
	s, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "flowsandbox kintone serve: %v\n", err)
		return 1
	}
	line, err := json.Marshal(struct {
		BaseURL string    `json:"base_url"`
		CAFile  string    `json:"ca_file"`
		Apps    []AppInfo `json:"apps"`
	}{s.BaseURL(), s.CAFile(), s.Apps()})
	if err == nil && envOut != "" {
		err = writeEnvFile(envOut, s)
	}
	if err == nil && operatorDir != "" {
		// The launchers of the setup are this binary's flownet and ksql-flow commands.
		var self string
		if self, err = os.Executable(); err == nil {
			err = s.WriteOperatorEnv(operatorDir, OperatorEnvOptions{Sandbox: self})
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "flowsandbox kintone serve: %v\n", err)
		s.Close()
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", line)
	<-ctx.Done()
	fmt.Fprintln(stderr, "flowsandbox kintone serve: shutting down")
	if err := s.Close(); err != nil {
		fmt.Fprintf(stderr, "flowsandbox kintone serve: %v\n", err)
		return 1
	}
	return 0
}

// writeEnvFile writes the connection facts as KEY=value lines (godotenv syntax): generic
// KINTONE_* names for every app and token set, plus the product's own variable names with
// the token each component gets (FlowNet: view/add/edit; poller: view/edit; JOB log and
// business apps: view only; CSV fixture app: full).
func writeEnvFile(path string, s *Server) error {
	var lines []string
	add := func(k, v string) { lines = append(lines, k+"="+envQuote(v)) }
	add("KINTONE_BASE_URL", s.BaseURL())
	if s.CAFile() != "" {
		add("KINTONE_CA_FILE", s.CAFile())
		add("SSL_CERT_FILE", s.CAFile())
		add("NODE_EXTRA_CA_CERTS", s.CAFile())
	}
	byRole := map[string]AppInfo{}
	for _, a := range s.Apps() {
		byRole[a.Role] = a
		r := strings.ToUpper(a.Role)
		add("KINTONE_"+r+"_APP_ID", a.ID)
		sets := make([]string, 0, len(a.Tokens))
		for set := range a.Tokens {
			sets = append(sets, set)
		}
		sort.Strings(sets)
		for _, set := range sets {
			add("KINTONE_"+r+"_TOKEN_"+strings.ToUpper(set), a.Tokens[set])
		}
	}
	// FlowNet's own variable names, for running a FlowNet by hand. Not the request app's
	// (KSQL_FLOWNET_REQUEST_APP_ID / _API_TOKEN): flowtest reads those names as the
	// production request-app settings and refuses a live run whose E2E request app equals
	// them, so a file sourced for a rehearsal must not set them. The request app is
	// KINTONE_REQUEST_APP_ID with KINTONE_REQUEST_TOKEN_POLLER.
	add("KSQL_FLOWNET_BASE_URL", s.BaseURL())
	for _, p := range []struct{ role, prefix, set string }{
		{"state", "KSQL_FLOWNET_STATE", "flownet"},
		{"audit", "KSQL_FLOWNET_AUDIT", "flownet"},
		{"log", "KSQL_FLOW_LOG", "read"},
		{"csv", "KSQL_CSV1_TARGET", "full"},
	} {
		if a, ok := byRole[p.role]; ok {
			add(p.prefix+"_APP_ID", a.ID)
			add(p.prefix+"_API_TOKEN", a.Tokens[p.set])
		}
	}
	if a, ok := byRole["customers"]; ok {
		add("KSQL_TOKEN_CUSTOMERS", a.Tokens["read"])
	}
	if a, ok := byRole["deals"]; ok {
		add("KSQL_TOKEN_DEALS", a.Tokens["read"])
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("write env file: %w", err)
	}
	return nil
}

// envQuote single-quotes values that godotenv would otherwise interpret (paths with
// backslashes or spaces); single quotes are taken literally.
func envQuote(v string) string {
	if strings.ContainsAny(v, " \\#\"'$") {
		return "'" + v + "'"
	}
	return v
}
