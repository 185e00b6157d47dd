package emulator

import (
	"crypto/rand"
	"fmt"
)

// apiError is a kintone error response: {"code","id","message"[,"errors"]} with an HTTP status.
type apiError struct {
	status  int
	code    string
	message string
	errors  map[string][]string // key ("record.x.value") -> messages; only for CB_VA01

	// bulkRequest failure: the sub-request error at bulkIndex of bulkLen results.
	bulkErr   *apiError
	bulkIndex int
	bulkLen   int
}

func (e *apiError) Error() string { return fmt.Sprintf("[%d] [%s] %s", e.status, e.code, e.message) }

type errMessages struct {
	Messages []string `json:"messages"`
}

type errBody struct {
	Code    string                 `json:"code"`
	ID      string                 `json:"id"`
	Message string                 `json:"message"`
	Errors  map[string]errMessages `json:"errors,omitempty"`
}

func (e *apiError) body() errBody {
	b := errBody{Code: e.code, ID: randomID(20), Message: e.message}
	if len(e.errors) > 0 {
		b.Errors = map[string]errMessages{}
		for k, v := range e.errors {
			b.Errors[k] = errMessages{Messages: v}
		}
	}
	return b
}

// Messages are kintone's English texts: our clients (Go, Node fetch with Accept-Language: *)
// get English from real kintone too.
const (
	msgInvalidInput = "Missing or invalid input."
	msgDuplicate    = "This value already exists in another record."
	msgRequired     = "Required."
	msgRequiredPar  = "Required field."
)

func errValidation(errs map[string][]string) *apiError {
	return &apiError{status: 400, code: "CB_VA01", message: msgInvalidInput, errors: errs}
}

func errField(key, msg string) *apiError {
	return errValidation(map[string][]string{key: {msg}})
}

func errJSON() *apiError {
	return &apiError{status: 400, code: "CB_IJ01", message: "Invalid JSON string."}
}

func errAppNotFound(app string) *apiError {
	return &apiError{status: 404, code: "GAIA_AP01", message: fmt.Sprintf("The app (ID: %s) not found. The app may have been deleted.", app)}
}

func errRecordNotFound(id string) *apiError {
	return &apiError{status: 404, code: "GAIA_RE01", message: fmt.Sprintf("The specified record (ID: %s) is not found.", id)}
}

func errUpdateKeyNotFound() *apiError {
	return &apiError{status: 404, code: "GAIA_RE20", message: "The record that matches the condition specified in \"updateKey\" is not found."}
}

func errRevision() *apiError {
	return &apiError{status: 409, code: "GAIA_CO02", message: "The revision is not the latest. Someone may update a record."}
}

func errDBLock() *apiError {
	return &apiError{status: 400, code: "GAIA_DA02", message: "Failed to save the changes because the database could not be locked. Please wait a while and try again."}
}

// errRecordIDField: a write set $id or the RECORD_NUMBER field. Code and Japanese text as
// captured from real kintone (reported in the go-kintone repository's issue tracker, #35); the English text is ours, the status
// assumed 400 like the other write refusals.
func errRecordIDField() *apiError {
	return &apiError{status: 400, code: "GAIA_UN10", message: "A value cannot be set for a field of the RECORD_ID type."}
}

func errNoLogin() *apiError {
	return &apiError{status: 401, code: "CB_AU01", message: "Please login."}
}

func errBadToken() *apiError {
	return &apiError{status: 400, code: "GAIA_IA02", message: "The specified API token does not match the API token generated via an app."}
}

func errDupToken() *apiError {
	return &apiError{status: 400, code: "GAIA_DA03", message: "You cannot specify a duplicate API token for the same app."}
}

func errNoPermission() *apiError {
	return &apiError{status: 403, code: "GAIA_NO01", message: "Using this API token, you cannot run the specified API."}
}

func errQuery(code, msg string) *apiError {
	return &apiError{status: 400, code: code, message: msg}
}

func errQuerySyntax() *apiError {
	return errField("query", "Query is invalid.")
}

func errFileNotFound(key string) *apiError {
	return &apiError{status: 404, code: "GAIA_BL01", message: fmt.Sprintf("The specified file (id: %s) not found.", key)}
}

func errTooManyRequests() *apiError {
	return &apiError{status: 429, code: "GAIA_TO04", message: "The number of concurrent API requests exceeds the limit."}
}

func errNotFoundAPI(path string) *apiError {
	// Real kintone answers an unknown API path with a 404 page; the code is our choice.
	return &apiError{status: 404, code: "CB_NF01", message: fmt.Sprintf("The API (%s) not found.", path)}
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// randomID makes kintone-looking random identifiers (error ids, tokens).
func randomID(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}
