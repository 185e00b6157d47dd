package ksqlflow

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Versions reported by capabilities and every result.
const (
	KsqlFlowVersion = "0.9.0-sandbox"
	EngineVersion   = "flowsandbox-dialect1/1"
	Contract        = "ksql-flow.execution/v1"
	resultSchemaID  = "https://ksql-flow.invalid/schemas/execution-result-v1.json"
)

// ExecutionResult is the `ksql-flow.execution/v1` result document.
type ExecutionResult struct {
	FormatVersion         int          `json:"formatVersion"`
	Kind                  string       `json:"kind"`
	Contract              string       `json:"contract"`
	CorrelationID         *string      `json:"correlationId"`
	AttemptID             *string      `json:"attemptId"`
	ExecutionID           string       `json:"executionId"`
	JobID                 *string      `json:"jobId"`
	Profile               string       `json:"profile"`
	Status                string       `json:"status"`
	ResultCode            string       `json:"resultCode"`
	ExecutionStarted      bool         `json:"executionStarted"`
	ExitCode              int          `json:"exitCode"`
	AsOf                  *string      `json:"asOf"`
	StartedAt             *string      `json:"startedAt"`
	FinishedAt            string       `json:"finishedAt"`
	DurationMs            int64        `json:"durationMs"`
	ReadCount             int          `json:"readCount"`
	WrittenCount          int          `json:"writtenCount"`
	DeletedCount          int          `json:"deletedCount"`
	APICalls              int64        `json:"apiCalls"`
	LastSuccessfulChunkNo *int         `json:"lastSuccessfulChunkNo"`
	LastWrittenKey        *string      `json:"lastWrittenKey"`
	KsqlFlowVersion       string       `json:"ksqlFlowVersion"`
	EngineVersion         string       `json:"engineVersion"`
	Error                 *ResultError `json:"error"`
	// input_files and output_files are always present (empty arrays when nothing was
	// read or written), as the real kSQL-Flow 0.9.0 writes them (contract/executionResult.js
	// normalizeJobOutcome); the real FlowNet classifies a result without output_files for a
	// node with exports as INVALID_EXECUTION_RESULT.
	InputFiles  []InputFile `json:"input_files"`
	OutputFiles []InputFile `json:"output_files"`
}

// ResultError is the error object of a non-SUCCESS result.
type ResultError struct {
	Category         string `json:"category"`
	Code             string `json:"code"`
	Message          string `json:"message"`
	Retryable        bool   `json:"retryable"`
	DetailsTruncated bool   `json:"detailsTruncated"`
}

// maxErrorMessageChars is the real kSQL-Flow's cut of error.message, in characters
// (EXECUTION_ERROR_MESSAGE_MAX_LENGTH in contract/executionResult.js).
const maxErrorMessageChars = 2000

// codeInfo is the fixed status / exit / category of each result code (contract §7 table).
type codeInfo struct {
	status   string
	exit     int
	category string
}

var resultCodes = map[string]codeInfo{
	"OK":                {"SUCCESS", 0, ""},
	"NO_DATA":           {"SUCCESS", 0, ""},
	"VALIDATION_ERROR":  {"FAILED", 1, "CONFIG"},
	"SQL_ERROR":         {"FAILED", 1, "SQL"},
	"ASSERT_FAILED":     {"FAILED", 2, "ASSERT"},
	"API_ERROR":         {"FAILED", 3, "API"},
	"AUTH_ERROR":        {"FAILED", 3, "AUTH"},
	"EXECUTION_TIMEOUT": {"FAILED", 3, "TIMEOUT"},
	"LOCK_UNAVAILABLE":  {"FAILED", 3, "LOCK"},
	"INTERNAL_ERROR":    {"FAILED", 3, "INTERNAL"},
	"CANCELLED":         {"CANCELLED", 3, "CANCELLED"},
	"LOCK_CONFLICT":     {"FAILED", 5, "LOCK"},
}

// jobLogStatus maps a result code to the JOB log status (ABORTED = ASSERT violation).
func jobLogStatus(code string) string {
	switch code {
	case "OK":
		return logSuccess
	case "NO_DATA":
		return "NO_DATA"
	case "ASSERT_FAILED":
		return logAborted
	case "CANCELLED":
		return logCancelled
	case "EXECUTION_TIMEOUT":
		return logTimeout
	}
	return logFailed
}

// failure is an outcome on its way into the result.
type failure struct {
	code      string
	category  string // overrides the default category (VALIDATION_ERROR of SQL is "SQL")
	errCode   string // error.code; defaults to the result code
	msg       string
	retryable bool
}

// setOutcome fills status, resultCode, exitCode and error consistently from one code.
func (r *ExecutionResult) setOutcome(f *failure) {
	if f == nil {
		info := resultCodes["OK"]
		r.Status, r.ResultCode, r.ExitCode, r.Error = info.status, "OK", info.exit, nil
		return
	}
	info, ok := resultCodes[f.code]
	if !ok {
		info = resultCodes["INTERNAL_ERROR"]
		f.code = "INTERNAL_ERROR"
	}
	cat := info.category
	if f.category != "" {
		cat = f.category
	}
	ec := f.errCode
	if ec == "" {
		ec = f.code
	}
	msg, truncated := f.msg, false
	if r := []rune(msg); len(r) > maxErrorMessageChars {
		msg, truncated = string(r[:maxErrorMessageChars]), true
	}
	r.Status, r.ResultCode, r.ExitCode = info.status, f.code, info.exit
	r.Error = &ResultError{Category: cat, Code: ec, Message: msg, Retryable: f.retryable, DetailsTruncated: truncated}
}

func isoMillis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// fillFileLists turns absent receipt lists into empty arrays, so the result always carries
// input_files and output_files.
func (r *ExecutionResult) fillFileLists() {
	if r.InputFiles == nil {
		r.InputFiles = []InputFile{}
	}
	if r.OutputFiles == nil {
		r.OutputFiles = []InputFile{}
	}
}

// writeJSONLine writes one JSON object and LF (the machine-output convention).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// writeResultFile writes the result next to its final name and renames it into place, so a
// reader never sees half a document.
func writeResultFile(path string, r *ExecutionResult) error {
	r.fillFileLists()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create result dir: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("move result into place: %w", err)
	}
	return nil
}
