package record

// Differential is the normalised history of one scenario.
type Differential struct {
	Records   []DiffRecord  `json:"records"`
	Processes []DiffProcess `json:"processes"`
}

// DiffRecord is one record, normalised: App is the app role ("state", "audit"), Type its
// record_type, Fields every other compared field (sorted by code when encoded).
type DiffRecord struct {
	App    string            `json:"app"`
	Type   string            `json:"type,omitempty"`
	Fields map[string]string `json:"fields"`
}

// DiffProcess is one FlowNet process: its name, exit code and the normalised heads of its
// stdout lines.
type DiffProcess struct {
	Name       string   `json:"name"`
	ExitCode   *int     `json:"exit_code"`
	StdoutHead []string `json:"stdout_head,omitempty"`
}
