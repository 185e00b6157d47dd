package results

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
)

// FeaturesDigest is "sha256:<hex>" over every regular file of fsys (the features folder:
// feature files, manifest, fixtures, gates): for each file in slash-path order, its path, a
// NUL, its content. The whole folder rather than the selected files, so that two runs of
// different selections from the same suite carry the same digest, and a change to any file a
// scenario could read shows. The NUL keeps a path from running into the content before it.
func FeaturesDigest(fsys fs.FS) (string, error) {
	var paths []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("features digest: %w", err)
	}
	return digestFiles(fsys, paths)
}

// digestFiles hashes paths of fsys in sorted order, whatever order they come in.
func digestFiles(fsys fs.FS, paths []string) (string, error) {
	paths = slices.Sorted(slices.Values(paths))
	h := sha256.New()
	for _, p := range paths {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return "", fmt.Errorf("features digest: %w", err)
		}
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write(data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
