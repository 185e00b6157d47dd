package faultproxy

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/record"
)

// Action is what a fault does to a request it takes.
type Action string

const (
	// ActionRespond answers with an error status and body; nothing is forwarded.
	ActionRespond Action = "respond"
	// ActionLoseResponse forwards the request, lets the upstream apply it, then drops
	// the connection instead of returning the response.
	ActionLoseResponse Action = "lose-response"
	// ActionReset drops the connection before forwarding.
	ActionReset Action = "reset"
	// ActionDelay holds the request for Fault.Delay, then forwards it.
	ActionDelay Action = "delay"
)

var actions = []Action{ActionRespond, ActionLoseResponse, ActionReset, ActionDelay}

// Always, as Fault.Times, makes a fault take every matching request from the Nth on.
const Always = -1

// FaultMatch selects the requests a fault counts. Empty fields are not checked; an
// empty FaultMatch matches every request that is not blocked by the mode.
type FaultMatch struct {
	// Method as sent (a method-override POST is a POST), case-insensitive.
	Method string
	// Path is a regexp on the URL path (no query).
	Path string
	// App is the app the request addresses: the JSON body's "app", else the "app" query
	// parameter of a read.
	App string
	// RecordID is a record the request addresses: the body's "id", one of the bulk
	// records[].id, one of a delete's "ids", or the "id" query parameter.
	RecordID string
	// RecordKey is a record the request addresses by its unique key: the value of the body's
	// updateKey or of one of the bulk records[].updateKey. With RecordID too, either way of
	// naming the record matches (one record, written by id or by updateKey).
	RecordKey string
	// Field must be a key of the body's "record", or of one of the bulk records[].record.
	Field string
	// Write takes only writes as kintone runs them: any method but GET, where a POST
	// carrying X-HTTP-Method-Override: GET is the read it stands for (Method is the method
	// as sent). It selects "the n-th write" of a client whichever verb each write uses.
	Write bool
	// Nth is the first matching request the fault takes (1-based; 0 means 1). Every
	// matching request counts, including those another fault took.
	Nth int
}

// Fault is a selective fault: which requests it takes (Match) and what it does to them
// (Action), at most Times times. See the package comment.
type Fault struct {
	ID     string
	Match  FaultMatch
	Action Action
	// Times is how many matching requests the fault takes: 0 or 1 once, n, or Always.
	Times int

	// respond only. Status and Code default from each other for the codes
	// KintoneErrors knows (409 ⇒ GAIA_CO02, GAIA_DA02 ⇒ 400, …). Message defaults to
	// the code's English message. Errors is the CB_VA01 "errors" object, key ⇒ messages.
	// Body, if set, is sent verbatim instead of the generated kintone error body.
	Status  int
	Code    string
	Message string
	Errors  map[string][]string
	Body    string

	// Delay is the hold of a delay fault (> 0, at most the proxy's BarrierTimeout).
	Delay time.Duration
}

// KintoneError is a kintone error code's HTTP status and English message
// (kintone-api.md §0 and §7, as the Node client receives them).
type KintoneError struct {
	Status  int
	Message string
}

// KintoneErrors are the codes a respond fault can send without an explicit status and
// message.
var KintoneErrors = map[string]KintoneError{
	"GAIA_CO02": {409, "The revision is not the latest. Someone may update a record."},
	"GAIA_DA02": {400, "Failed to save the changes because the database could not be locked. Please wait a while and try again."},
	"CB_VA01":   {400, "Missing or invalid input."},
	"CB_IJ01":   {400, "Invalid JSON string."},
	"CB_NO02":   {403, "No privilege to proceed."},
	"GAIA_NO01": {403, "Using this API token, you cannot run the specified API."},
	"GAIA_TO04": {429, "The number of concurrent API requests exceeds the limit."},
}

// codeForStatus is the code a bare status stands for, where only one code fits.
var codeForStatus = map[int]string{409: "GAIA_CO02", 429: "GAIA_TO04"}

// DuplicateMessage is kintone's CB_VA01 message for a unique-field clash.
const DuplicateMessage = "This value already exists in another record."

// Firing records one request a fault took.
type Firing struct {
	// At is when the fault acted: the response sent (respond), the connection dropped
	// (reset, lose-response), the hold begun (delay).
	At      time.Time `json:"at"`
	FaultID string    `json:"fault_id"`
	Action  Action    `json:"action"`
	// Match is which matching request this was (1-based, counted per fault).
	Match     int    `json:"match"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	App       string `json:"app,omitempty"`
	RecordID  string `json:"record_id,omitempty"`
	RecordKey string `json:"record_key,omitempty"` // the updateKey value of a PUT by updateKey
	// Status is the status sent (respond) or the upstream's status (lose-response: the
	// write the client never heard of).
	Status int `json:"status,omitempty"`
	// Error says why the fault did not act although it took the request (a barrier
	// before it timed out, the client went away, the upstream failed).
	Error string `json:"error,omitempty"`
}

// Record is the firing for the scenario record: fault is the feature's name for the fault,
// process the process whose proxy holds it, appRole the role of the app it addressed (the
// record names no app id).
func (f Firing) Record(fault, process, appRole string) record.FaultFiring {
	return record.FaultFiring{Fault: fault, Process: process, Action: string(f.Action), Match: f.Match,
		Method: f.Method, Path: f.Path, App: appRole, RecordID: f.RecordID, RecordKey: f.RecordKey,
		Status: f.Status, Error: f.Error, At: f.At.UTC()}
}

// compiledFault is a validated fault ready for matching.
type compiledFault struct {
	f      Fault
	re     *regexp.Regexp // nil: any path
	method string
	first  int
	times  int // Always or ≥ 1

	// respond: the status, content type and body; the body's "id" placeholder is
	// replaced per response (kintone sends a fresh id each time).
	status      int
	contentType string
	body        []byte
	freshID     bool
}

var methodToken = regexp.MustCompile(`^[A-Z]+$`)

func compileFault(f Fault) (*compiledFault, error) {
	if strings.TrimSpace(f.ID) == "" {
		return nil, errors.New("fault id is empty")
	}
	fail := func(format string, a ...any) (*compiledFault, error) {
		return nil, fmt.Errorf("fault %s: "+format, append([]any{f.ID}, a...)...)
	}
	if !slices.Contains(actions, f.Action) {
		return fail("unknown action %q (want respond, lose-response, reset or delay)", f.Action)
	}
	c := &compiledFault{f: f, method: strings.ToUpper(strings.TrimSpace(f.Match.Method)), first: max(f.Match.Nth, 1), times: f.Times}
	if c.method != "" && !methodToken.MatchString(c.method) {
		return fail("match.method %q is not an HTTP method", f.Match.Method)
	}
	if f.Match.Path != "" {
		re, err := regexp.Compile(f.Match.Path)
		if err != nil {
			return fail("match.path: %v", err)
		}
		c.re = re
	}
	if f.Match.Nth < 0 {
		return fail("match.nth %d is negative (1 is the first matching request)", f.Match.Nth)
	}
	switch {
	case f.Times == 0:
		c.times = 1
	case f.Times < Always:
		return fail("times %d (want a positive count, or Always)", f.Times)
	}
	if f.Action != ActionDelay && f.Delay != 0 {
		return fail("delay is only for the delay action, not %s", f.Action)
	}
	if f.Action != ActionRespond && (f.Status != 0 || f.Code != "" || f.Message != "" || f.Errors != nil || f.Body != "") {
		return fail("status, code, message, errors and body are only for the respond action, not %s", f.Action)
	}
	switch f.Action {
	case ActionDelay:
		if f.Delay <= 0 {
			return fail("delay action needs a positive delay")
		}
	case ActionRespond:
		if err := c.compileResponse(); err != nil {
			return fail("%v", err)
		}
	}
	return c, nil
}

// compileResponse settles a respond fault's status and body (see Fault).
func (c *compiledFault) compileResponse() error {
	f := c.f
	c.status = f.Status
	code := f.Code
	if code == "" && f.Body == "" {
		code = codeForStatus[f.Status]
	}
	known, isKnown := KintoneErrors[code]
	if c.status == 0 {
		if !isKnown {
			if code == "" {
				return errors.New("respond needs a status or a code")
			}
			return fmt.Errorf("respond: unknown kintone code %q needs its status (known codes: %s)", code, knownCodes())
		}
		c.status = known.Status
	}
	// A 2xx answer is a read answered in kintone's stead (say, a record that another writer's
	// record stands for under a unique key): it has no generated form, only the given body.
	answer := c.status >= 200 && c.status <= 299
	switch {
	case answer && (f.Body == "" || code != ""):
		return fmt.Errorf("respond: status %d is not an error status (400-599); a 2xx answer needs its body and no code", c.status)
	case !answer && (c.status < 400 || c.status > 599):
		return fmt.Errorf("respond: status %d is not an error status (400-599), nor a 2xx answer with a body", c.status)
	}
	if f.Body != "" {
		c.body = []byte(f.Body)
		c.contentType = "text/plain; charset=utf-8"
		if json.Valid(c.body) {
			c.contentType = "application/json;charset=utf-8"
		}
		return nil
	}
	if code == "" {
		if c.status >= 500 {
			// kintone's outage and maintenance answers are not JSON (kintone-api.md §7).
			c.body = []byte(fmt.Sprintf("%d %s", c.status, http.StatusText(c.status)))
			c.contentType = "text/plain; charset=utf-8"
			return nil
		}
		return fmt.Errorf("respond: status %d needs a code (e.g. GAIA_DA02 or CB_VA01 for 400) or a body", c.status)
	}
	msg := f.Message
	if msg == "" {
		if !isKnown {
			return fmt.Errorf("respond: unknown kintone code %q needs a message", code)
		}
		msg = known.Message
	}
	errs := f.Errors
	if code == "CB_VA01" && len(errs) == 0 {
		if f.Match.Field == "" {
			return errors.New("respond CB_VA01 needs errors (kintone always sends them) or match.field (taken as the unique field whose value is a duplicate)")
		}
		errs = map[string][]string{"record." + f.Match.Field + ".value": {DuplicateMessage}}
	}
	type messages struct {
		Messages []string `json:"messages"`
	}
	body := struct {
		Code    string              `json:"code"`
		ID      string              `json:"id"`
		Message string              `json:"message"`
		Errors  map[string]messages `json:"errors,omitempty"`
	}{Code: code, ID: errorIDPlaceholder, Message: msg}
	if len(errs) > 0 {
		body.Errors = map[string]messages{}
		for k, v := range errs {
			body.Errors[k] = messages{Messages: v}
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("respond: %w", err)
	}
	c.body, c.contentType, c.freshID = b, "application/json;charset=utf-8", true
	return nil
}

func knownCodes() string {
	codes := make([]string, 0, len(KintoneErrors))
	for k := range KintoneErrors {
		codes = append(codes, k)
	}
	slices.Sort(codes)
	return strings.Join(codes, ", ")
}

// errorIDPlaceholder has the length of kintone's error ids, so replacing it keeps the
// body's length.
const errorIDPlaceholder = "XXXXXXXXXXXXXXXXXXXX"

const errorIDAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// responseBody is the body to send, with a fresh kintone-style error id.
func (c *compiledFault) responseBody() []byte {
	if !c.freshID {
		return c.body
	}
	id := make([]byte, len(errorIDPlaceholder))
	_, _ = rand.Read(id)
	for i := range id {
		id[i] = errorIDAlphabet[int(id[i])%len(errorIDAlphabet)]
	}
	return []byte(strings.Replace(string(c.body), errorIDPlaceholder, string(id), 1))
}

func (c *compiledFault) matches(v *requestView) bool {
	m := &c.f.Match
	if c.method != "" && c.method != v.method {
		return false
	}
	if c.re != nil && !c.re.MatchString(v.path) {
		return false
	}
	if m.App != "" && v.app() != m.App {
		return false
	}
	if !v.addresses(m.RecordID, m.RecordKey) {
		return false
	}
	if m.Field != "" && !v.hasField(m.Field) {
		return false
	}
	if m.Write && !v.isWrite() {
		return false
	}
	return true
}

// faultState is the per-id state, kept for the proxy's life.
type faultState struct {
	c        *compiledFault
	fromFile bool
	matched  int // matching requests seen
	taken    int // requests taken
}

func (st *faultState) exhausted() bool { return st.c.times != Always && st.taken >= st.c.times }

// faultTake is a request a fault took, carried to where the action applies.
type faultTake struct {
	c       *compiledFault // as it was when taken (a control-file edit may replace the state's)
	match   int
	entry   *trafficEntry
	applied bool // its firing is recorded
}

// faultError is a fault's hold that ended early; its text is ours alone.
type faultError struct{ id, reason string }

func (e *faultError) Error() string { return fmt.Sprintf("fault %s: %s", e.id, e.reason) }

// errResponseLost makes the ReverseProxy give up on a response a fault drops.
var errResponseLost = errors.New("response dropped by a lose-response fault")
