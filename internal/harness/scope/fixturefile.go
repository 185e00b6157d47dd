package scope

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FixtureKind is the folder of features/fixtures a fixture file of that kind lives in.
type FixtureKind string

const (
	FixtureNetworks FixtureKind = "networks" // network YAMLs
	FixtureJobs     FixtureKind = "jobs"     // SQL job files
)

// FixtureFile is a fixture file resolved inside its folder.
type FixtureFile struct {
	Path string // absolute, symlinks resolved: the file that is read
	Name string // slash-separated path of Path inside its kind's folder ("network-success.yaml")
}

// ResolveFixture is the one way a fixture path from a feature is turned into a file: the
// preflight checks and the step reads what it returns, so both see the same file. name is
// the path as the step text gives it, relative to fixturesDir/<kind>. It is cleaned; an
// absolute path, a path that climbs out of the folder and a path whose symlinks lead out of
// it are refused, as is anything that is not a regular file. fixturesDir itself may sit
// behind symlinks (a checkout on a linked disk): both it and the result are resolved before
// they are compared.
func ResolveFixture(fixturesDir string, kind FixtureKind, name string) (FixtureFile, error) {
	folder := fixtureFolder(filepath.Join(fixturesDir, string(kind)))
	if name == "" {
		return FixtureFile{}, fmt.Errorf("fixture path is empty; name a file in %s", folder)
	}
	p := filepath.FromSlash(name)
	// A leading slash or backslash is absolute for the author whatever the OS says.
	if filepath.IsAbs(p) || filepath.VolumeName(p) != "" || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return FixtureFile{}, fmt.Errorf("fixture path %q is absolute; name a file inside %s", name, folder)
	}
	clean := filepath.Clean(p)
	if escapes(clean) {
		return FixtureFile{}, fmt.Errorf("fixture path %q escapes %s", name, folder)
	}
	if clean == "." {
		return FixtureFile{}, fmt.Errorf("fixture path %q names the folder %s, not a file in it", name, folder)
	}
	real, rel, err := within(filepath.Join(fixturesDir, string(kind)), clean)
	if err != nil {
		return FixtureFile{}, fmt.Errorf("fixture path %q %w", name, err)
	}
	return FixtureFile{Path: real, Name: rel}, nil
}

// within resolves path (relative to root, or absolute) with every symlink followed and
// requires a regular file inside root, itself resolved. The error reads after the path
// ("escapes …", "is a symlink to outside …").
func within(root, path string) (real, rel string, err error) {
	folder := fixtureFolder(root)
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", "", fmt.Errorf("cannot be resolved: folder %s: %w", root, err)
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return "", "", fmt.Errorf("cannot be resolved: folder %s: %w", absRoot, err)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(absRoot, path)
	}
	if r, err := filepath.Rel(absRoot, filepath.Clean(path)); err != nil || escapes(r) {
		return "", "", fmt.Errorf("escapes %s", folder)
	}
	real, err = filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("names no file in %s (or a symlink on its way leads nowhere)", folder)
		}
		return "", "", fmt.Errorf("cannot be resolved: %w", err)
	}
	r, err := filepath.Rel(realRoot, real)
	if err != nil || escapes(r) || r == "." {
		return "", "", fmt.Errorf("is a symlink to outside %s (it leads to %s)", folder, real)
	}
	info, err := os.Stat(real)
	if err != nil {
		return "", "", fmt.Errorf("cannot be read: %w", err)
	}
	if !info.Mode().IsRegular() {
		return "", "", fmt.Errorf("is not a regular file in %s", folder)
	}
	return real, filepath.ToSlash(r), nil
}

// fixtureFolder names a fixture folder as authors know it ("features/fixtures/networks").
func fixtureFolder(root string) string {
	base := filepath.Base(root)
	if filepath.Base(filepath.Dir(root)) == "fixtures" {
		return "features/fixtures/" + base
	}
	return root
}

// escapes says whether a clean relative path climbs above its base.
func escapes(clean string) bool {
	return clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator))
}
