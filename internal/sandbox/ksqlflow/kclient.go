package ksqlflow

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/ksqlflow/flowtest/internal/kintoneapi"
)

// countingTransport counts HTTP requests so apiCalls in the result and the JOB log is the
// real number of kintone calls, JOB log calls included.
type countingTransport struct {
	base  http.RoundTripper
	calls *atomic.Int64
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.calls.Add(1)
	return t.base.RoundTrip(r)
}

// conn is one kintone connection of a profile.
type conn struct {
	prof  *Profile
	kc    *kintoneapi.Client
	calls atomic.Int64
}

// newConn builds the client with the tokens of the given logical apps (and the log app when
// withLog). The CA comes from SSL_CERT_FILE, loaded explicitly so it works on every OS, plus
// NODE_EXTRA_CA_CERTS as the Node kSQL-Flow reads it (the real config has no CA key).
func newConn(p *Profile, logical []string, withLog bool) (*conn, error) {
	ca := os.Getenv("SSL_CERT_FILE")
	hc, err := kintoneapi.HTTPClientWithCAs(ca, nodeExtraCACerts(os.Getenv("NODE_EXTRA_CA_CERTS"), os.Stderr))
	if err != nil {
		return nil, fmt.Errorf("TLS setup: %w", err)
	}
	hc.Timeout = time.Duration(p.HTTPTimeoutMs * float64(time.Millisecond))
	c := &conn{prof: p}
	hc.Transport = countingTransport{base: hc.Transport, calls: &c.calls}
	tokens := map[string]string{}
	for _, name := range logical {
		a, ok := p.Apps[name]
		if !ok {
			return nil, fmt.Errorf("LAPP_%s is not a logical app of the profile", name)
		}
		if a.Token == "" {
			return nil, fmt.Errorf("アプリ ID %s の API トークンが config の apps に定義されていません", a.AppID)
		}
		tokens[a.AppID] = a.Token
	}
	if withLog {
		if p.LogApp == nil {
			return nil, fmt.Errorf("the profile has no logApp (the JOB log app is required)")
		}
		if p.LogApp.Token == "" {
			return nil, fmt.Errorf("アプリ ID %s の API トークンが config の apps に定義されていません", p.LogApp.AppID)
		}
		tokens[p.LogApp.AppID] = p.LogApp.Token
	}
	c.kc = kintoneapi.New(p.BaseURL, hc, tokens)
	// kSQL-Flow answers kintone's 429 by its profile's retry policy (describe-profile's
	// retry, default the real's 5 / 1000 ms / 60000 ms), not by the shared client's default:
	// maxAttempts 1 sends once.
	c.kc.Retry = kintoneapi.Retry{MaxAttempts: int(p.Retry.MaxAttempts),
		Initial: time.Duration(p.Retry.InitialDelayMs * float64(time.Millisecond)), Max: time.Duration(p.Retry.MaxDelayMs * float64(time.Millisecond)),
		IgnoreRetryAfter: !p.Retry.RespectRetryAfter}
	return c, nil
}

// nodeExtraCACerts is the NODE_EXTRA_CA_CERTS file to add to the roots, read as Node reads it:
// the certificates are added to the system's (not instead of them), and a file that cannot be
// loaded is ignored with a warning, not fatal ("" then).
func nodeExtraCACerts(path string, warn io.Writer) string {
	if path == "" {
		return ""
	}
	data, err := os.ReadFile(path)
	if err == nil && !x509.NewCertPool().AppendCertsFromPEM(data) {
		err = errors.New("no PEM certificate in it")
	}
	if err != nil {
		fmt.Fprintf(warn, "Warning: Ignoring extra certs from `%s`, load failed: %v\n", path, err)
		return ""
	}
	return path
}

// readPage is the page size of business reads (kintone's maximum).
const readPage = 500

// appReader reads business apps page by page ($id keyset paging), stopping between pages
// when the job is cancelled or an API-call budget is spent.
type appReader struct {
	c        *conn
	maxCalls int64
	stop     func() bool // true once a stop signal arrived
}

// ErrAPIBudget is returned when maxApiCalls would be exceeded.
var errAPIBudget = errors.New("maxApiCalls exceeded")

func (r *appReader) ReadApp(ctx context.Context, logical string, fields []string) ([]map[string]string, error) {
	a, ok := r.c.prof.Apps[logical]
	if !ok {
		return nil, fmt.Errorf("LAPP_%s is not a logical app of the profile", logical)
	}
	var out []map[string]string
	last := "0"
	for {
		if r.stop != nil && r.stop() {
			return nil, errCancelled
		}
		if r.maxCalls > 0 && r.c.calls.Load() >= r.maxCalls {
			return nil, fmt.Errorf("read LAPP_%s: %w (%d)", logical, errAPIBudget, r.maxCalls)
		}
		q := fmt.Sprintf("$id > %s order by $id asc limit %d", last, readPage)
		recs, err := r.c.kc.GetRecords(ctx, a.AppID, q, fields)
		if err != nil {
			return nil, fmt.Errorf("read LAPP_%s: %w", logical, err)
		}
		for _, rec := range recs {
			m := make(map[string]string, len(rec))
			for k := range rec {
				m[k] = rec.Str(k)
			}
			out = append(out, m)
		}
		if len(recs) < readPage {
			return out, nil
		}
		last = recs[len(recs)-1].ID()
	}
}

// classifyAPIError maps a kintone failure to AUTH_ERROR or API_ERROR and says whether a
// retry could help.
func classifyAPIError(err error) (code string, retryable bool) {
	var ae *kintoneapi.APIError
	if errors.As(err, &ae) {
		switch ae.Code {
		case "GAIA_IA02", "GAIA_NO01", "GAIA_AP15", "GAIA_DA03", "CB_AU01", "CB_WA01", "CB_NO02":
			return "AUTH_ERROR", false
		case "GAIA_TO04", "GAIA_DA02", "GAIA_RE18":
			return "API_ERROR", true
		}
		if ae.Status == 401 || ae.Status == 403 {
			return "AUTH_ERROR", false
		}
		return "API_ERROR", ae.Status >= 500
	}
	return "API_ERROR", true // transport failure: the outcome of a read is simply unknown
}
