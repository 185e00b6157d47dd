package flownet

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// The execution bundle (§1.3.1) freezes a Run's definition: the network YAML and every SQL
// file as they were at NEW, zipped deterministically and stored on the Run record as
// source_bundle_attachment with its SHA-256 in source_bundle_sha256. Every resume executes
// the bundle, never the working copy.

const bundleFormat = "flownet-execution-bundle/v1"

type bundleManifest struct {
	Format           string            `json:"format"`
	NetworkID        string            `json:"network_id"`
	DefinitionSHA256 string            `json:"definition_sha256"`
	Definition       string            `json:"definition"` // "network.yaml"
	Files            []bundleFile      `json:"files"`
	NodeSQL          map[string]string `json:"node_sql"` // node id -> bundle path
}

type bundleFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
	Source string `json:"source"` // the nodes[].sql value it came from
}

// bundleTime is the fixed timestamp of every zip entry, so the same inputs give the same bytes.
var bundleTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// buildBundle zips the network and its SQL (read now from the working copy).
func buildBundle(n *Network) ([]byte, error) {
	m := bundleManifest{Format: bundleFormat, NetworkID: n.NetworkID, DefinitionSHA256: n.DefinitionSHA256(),
		Definition: "network.yaml", NodeSQL: map[string]string{}}
	contents := map[string][]byte{"network.yaml": n.Raw}
	for _, nd := range n.Nodes {
		data, err := os.ReadFile(n.SQLPath(nd))
		if err != nil {
			return nil, &codedError{Code: "BUNDLE_INPUT_INVALID", Msg: fmt.Sprintf("read SQL of node %s: %v", nd.ID, err), Err: err}
		}
		sum := sha256Hex(data)
		p := "sql/" + sum + ".sql"
		if _, dup := contents[p]; !dup {
			contents[p] = data
			m.Files = append(m.Files, bundleFile{Path: p, SHA256: sum, Bytes: len(data), Source: nd.SQL})
		}
		m.NodeSQL[nd.ID] = p
	}
	man, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode bundle manifest: %w", err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, data []byte) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: bundleTime})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	if err := add("manifest.json", man); err != nil {
		return nil, fmt.Errorf("write bundle: %w", err)
	}
	if err := add("network.yaml", n.Raw); err != nil {
		return nil, fmt.Errorf("write bundle: %w", err)
	}
	for _, f := range m.Files {
		if err := add(f.Path, contents[f.Path]); err != nil {
			return nil, fmt.Errorf("write bundle: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("write bundle: %w", err)
	}
	return buf.Bytes(), nil
}

// openedBundle is a verified bundle extracted to disk.
type openedBundle struct {
	Network *Network
	SQL     map[string]string // node id -> absolute path of the extracted SQL
}

// openBundle verifies the zip against wantSHA and every file against the manifest, parses
// the stored network and extracts the SQL under dir.
func openBundle(data []byte, wantSHA, dir string) (*openedBundle, error) {
	if got := sha256Hex(data); got != wantSHA {
		return nil, coded("BUNDLE_HASH_MISMATCH", "execution bundle SHA-256 %s differs from the Run's %s", got, wantSHA)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, &codedError{Code: "BUNDLE_ZIP_INVALID", Msg: "execution bundle is not a zip: " + err.Error(), Err: err}
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return nil, &codedError{Code: "BUNDLE_ZIP_INVALID", Msg: "open bundle entry " + f.Name + ": " + err.Error(), Err: err}
		}
		b, err := io.ReadAll(io.LimitReader(rc, 64<<20))
		rc.Close()
		if err != nil {
			return nil, &codedError{Code: "BUNDLE_ZIP_INVALID", Msg: "read bundle entry " + f.Name + ": " + err.Error(), Err: err}
		}
		files[f.Name] = b
	}
	var m bundleManifest
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil || m.Format != bundleFormat {
		return nil, coded("BUNDLE_MANIFEST_INVALID", "execution bundle manifest is missing or not %s", bundleFormat)
	}
	def := files[m.Definition]
	if sha256Hex(def) != m.DefinitionSHA256 {
		return nil, coded("BUNDLE_FILE_MISMATCH", "bundled network definition does not match its manifest hash")
	}
	n, verrs := ParseNetwork(def, dir)
	if len(verrs) > 0 {
		return nil, coded("BUNDLE_MANIFEST_INVALID", "bundled network definition is invalid: %s", verrs[0].String())
	}
	if err := os.MkdirAll(filepath.Join(dir, "sql"), 0o755); err != nil {
		return nil, fmt.Errorf("extract bundle: %w", err)
	}
	ob := &openedBundle{Network: n, SQL: map[string]string{}}
	for _, f := range m.Files {
		b, ok := files[f.Path]
		if !ok || sha256Hex(b) != f.SHA256 || filepath.Base(f.Path) != f.SHA256+".sql" {
			return nil, coded("BUNDLE_FILE_MISMATCH", "bundle file %s is missing or altered", f.Path)
		}
		if err := os.WriteFile(filepath.Join(dir, "sql", f.SHA256+".sql"), b, 0o644); err != nil {
			return nil, fmt.Errorf("extract bundle: %w", err)
		}
	}
	for _, nd := range n.Nodes {
		p, ok := m.NodeSQL[nd.ID]
		if !ok {
			return nil, coded("BUNDLE_MANIFEST_INVALID", "bundle has no SQL for node %s", nd.ID)
		}
		ob.SQL[nd.ID] = filepath.Join(dir, filepath.FromSlash(p))
	}
	return ob, nil
}
