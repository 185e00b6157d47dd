package emulator

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
)

// The app schemas are data, not code: one JSON file per role under apps/.
//
//go:embed apps/*.json
var appFiles embed.FS

// Roles in the order the emulator presents them (and assigns them in the serve line).
var roleOrder = []string{"state", "audit", "request", "log", "customers", "deals", "csv"}

// Permission names a token can carry.
const (
	permView   = "view"
	permAdd    = "add"
	permEdit   = "edit"
	permDelete = "delete"
)

// FieldDef is one field of an app schema file.
type FieldDef struct {
	Code         string   `json:"code"`
	Type         string   `json:"type"`
	Label        string   `json:"label"`
	Required     bool     `json:"required,omitempty"`
	Unique       bool     `json:"unique,omitempty"`
	Options      []string `json:"options,omitempty"`
	DefaultValue any      `json:"defaultValue,omitempty"`
}

// AppSchema is the parsed content of one apps/<role>.json file.
type AppSchema struct {
	Role   string              `json:"role"`
	Name   string              `json:"name"`
	ID     string              `json:"id"`
	Tokens map[string][]string `json:"tokens"`
	Fields []FieldDef          `json:"fields"`
	Seed   []map[string]struct {
		Value any `json:"value"`
	} `json:"seed,omitempty"`
}

// System field codes: kintone's Japanese defaults, which FlowNet's request store reads.
const (
	codeID         = "$id"
	codeRevision   = "$revision"
	codeRecordNo   = "レコード番号"
	codeCreator    = "作成者"
	codeCreatedAt  = "作成日時"
	codeModifier   = "更新者"
	codeModifiedAt = "更新日時"
)

// systemFields are added to every app; they are not writable through the record APIs.
var systemFields = []FieldDef{
	{Code: codeRecordNo, Type: "RECORD_NUMBER", Label: codeRecordNo},
	{Code: codeCreator, Type: "CREATOR", Label: codeCreator},
	{Code: codeCreatedAt, Type: "CREATED_TIME", Label: codeCreatedAt},
	{Code: codeModifier, Type: "MODIFIER", Label: codeModifier},
	{Code: codeModifiedAt, Type: "UPDATED_TIME", Label: codeModifiedAt},
}

// LoadSchemas parses the embedded app schema files, in role order.
func LoadSchemas() ([]*AppSchema, error) {
	byRole := map[string]*AppSchema{}
	entries, err := fs.Glob(appFiles, "apps/*.json")
	if err != nil {
		return nil, fmt.Errorf("list app schemas: %w", err)
	}
	for _, name := range entries {
		data, err := appFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read app schema %s: %w", name, err)
		}
		var s AppSchema
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("parse app schema %s: %w", name, err)
		}
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("app schema %s: %w", name, err)
		}
		if _, dup := byRole[s.Role]; dup {
			return nil, fmt.Errorf("app schema %s: role %q defined twice", name, s.Role)
		}
		byRole[s.Role] = &s
	}
	var out []*AppSchema
	for _, r := range roleOrder {
		if s, ok := byRole[r]; ok {
			out = append(out, s)
			delete(byRole, r)
		}
	}
	// Roles not in roleOrder (a schema file added later) come last, sorted for determinism.
	var rest []string
	for r := range byRole {
		rest = append(rest, r)
	}
	sort.Strings(rest)
	for _, r := range rest {
		out = append(out, byRole[r])
	}
	return out, nil
}

func (s *AppSchema) check() error {
	if s.Role == "" || s.ID == "" || s.Name == "" {
		return fmt.Errorf("role, id and name are required")
	}
	if len(s.Tokens) == 0 {
		return fmt.Errorf("no token permission sets")
	}
	for set, perms := range s.Tokens {
		for _, p := range perms {
			switch p {
			case permView, permAdd, permEdit, permDelete:
			default:
				return fmt.Errorf("token set %q: unknown permission %q", set, p)
			}
		}
	}
	seen := map[string]bool{}
	for _, f := range s.Fields {
		if _, ok := kindByType[f.Type]; !ok { // the field types the emulator implements
			return fmt.Errorf("field %q: unsupported type %q", f.Code, f.Type)
		}
		if seen[f.Code] || f.Code == codeID || f.Code == codeRevision {
			return fmt.Errorf("field %q: duplicate or reserved code", f.Code)
		}
		seen[f.Code] = true
		// kintone only offers "prohibit duplicate values" on these types.
		if f.Unique && f.Type != "SINGLE_LINE_TEXT" && f.Type != "NUMBER" && f.Type != "DATE" && f.Type != "DATETIME" {
			return fmt.Errorf("field %q: type %s cannot be unique", f.Code, f.Type)
		}
		if (f.Type == "DROP_DOWN" || f.Type == "CHECK_BOX") && len(f.Options) == 0 {
			return fmt.Errorf("field %q: options required", f.Code)
		}
	}
	for _, f := range systemFields {
		if seen[f.Code] {
			return fmt.Errorf("field %q: collides with a system field", f.Code)
		}
	}
	return nil
}
