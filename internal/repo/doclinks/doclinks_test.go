// Package doclinks holds only tests: every relative link of the repository's Markdown guide
// (README.md and docs/*.md) names a file of the repository, and a #fragment into a Markdown
// file names one of its headings. The README is a guide that links to docs/ pages for the
// reference (issue 43): a moved or renamed section must not leave a dead link behind. The
// README's set-up keeps exactly its two commands, true to the Makefile and CI, and its quick
// start runs a scenario that exists.
package doclinks

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

var (
	// fence opens or closes a fenced code block (CommonMark: up to three spaces, then ``` or ~~~).
	fence = regexp.MustCompile("^ {0,3}(```|~~~)")
	// heading is an ATX heading; its text is what GitHub makes the anchor of.
	heading = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	// codeSpan is inline code: a link written inside it is text, not a link.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// link is an inline link or image, with an optional title.
	link = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// htmlAnchor is an explicit anchor (<a id="x">, <a name="x">).
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// scheme marks an absolute URL (https:, mailto: …), which this test does not fetch.
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// inlineLink is replaced by its text before a heading becomes an anchor, as GitHub renders it.
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// slug is GitHub's anchor of a heading: lower case, every character that is not a letter,
// digit, space, hyphen or underscore dropped, spaces turned into hyphens.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors are the fragments a Markdown text answers to: its headings' slugs (a repeated one
// gets -1, -2 … as GitHub numbers them) and its explicit HTML anchors.
func anchors(text string) map[string]bool {
	got, seen := map[string]bool{}, map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			got[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			got[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			got[s] = true
		}
		seen[s]++
	}
	return got
}

// brokenLinks checks the relative links of files (slash paths under root) and says, per dead
// link, file:line, the target and what is wrong.
func brokenLinks(root string, files []string) ([]string, error) {
	var bad []string
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		inFence := false
		for i, line := range strings.Split(string(data), "\n") {
			if fence.MatchString(line) {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			for _, m := range link.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				target := m[1]
				if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
					continue
				}
				if problem := checkLink(absRoot, name, target); problem != "" {
					bad = append(bad, fmt.Sprintf("%s:%d: (%s): %s", name, i+1, target, problem))
				}
			}
		}
	}
	return bad, nil
}

// checkLink says what is wrong with one relative link of the file from ("" when nothing).
func checkLink(absRoot, from, target string) string {
	path, frag, _ := strings.Cut(target, "#")
	path, err := url.PathUnescape(path)
	if err != nil {
		return "not a valid URL path: " + err.Error()
	}
	file := filepath.Join(absRoot, filepath.FromSlash(from))
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return "an absolute path: it works on no other checkout"
		}
		file = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if rel, err := filepath.Rel(absRoot, file); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "points outside the repository"
		}
	}
	st, err := os.Stat(file)
	if err != nil {
		return "no such file"
	}
	if frag == "" || st.IsDir() || !strings.HasSuffix(strings.ToLower(file), ".md") {
		return ""
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(data))[frag] {
		return fmt.Sprintf("no heading or anchor #%s in %s", frag, filepath.Base(file))
	}
	return ""
}

// guideFiles are README.md and every docs/*.md, as slash paths under root.
func guideFiles(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatalf("no docs/*.md under %s: not run from the module?", root)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, "docs/"+filepath.Base(d))
	}
	sort.Strings(files[1:])
	return files
}

func TestGuideLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	bad, err := brokenLinks(root, guideFiles(t, root))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// The checker finds each kind of dead link and passes what is not one: a fixture tree with one
// link of each sort.
func TestBrokenLinksFindsDeadLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/page.md", "# Page\n\n## Which FlowNet the sandbox drives: `--product`\n\n## Twice\n\n## Twice\n\n<a id=\"kpd-1\"></a>\n\n```sh\n# not a heading\n```\n")
	write("docs/other.txt", "x\n")
	write("README.md", strings.Join([]string{
		"# Guide",
		"[ok](docs/page.md) [ok](docs/page.md#which-flownet-the-sandbox-drives---product) [ok](docs/page.md#twice-1)",
		"[ok](docs/page.md#kpd-1) [ok](#guide) [ok](docs/) [ok](https://example.com/x) [ok](docs/other.txt#L3)",
		"[gone](docs/gone.md)",
		"[bad anchor](docs/page.md#not-there)",
		"[fenced heading](docs/page.md#not-a-heading)",
		"[third twice](docs/page.md#twice-2)",
		"[own anchor](#nowhere)",
		"[outside](../elsewhere.md)",
		"[absolute](/docs/page.md)",
		"`[in code](docs/gone-too.md)`",
		"```",
		"[in a fence](docs/gone-too.md)",
		"```",
	}, "\n"))
	bad, err := brokenLinks(root, []string{"README.md"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:4: (docs/gone.md): no such file",
		"README.md:5: (docs/page.md#not-there): no heading or anchor #not-there in page.md",
		"README.md:6: (docs/page.md#not-a-heading): no heading or anchor #not-a-heading in page.md",
		"README.md:7: (docs/page.md#twice-2): no heading or anchor #twice-2 in page.md",
		"README.md:8: (#nowhere): no heading or anchor #nowhere in README.md",
		"README.md:9: (../elsewhere.md): points outside the repository",
		"README.md:10: (/docs/page.md): an absolute path: it works on no other checkout",
	}
	if strings.Join(bad, "\n") != strings.Join(want, "\n") {
		t.Errorf("dead links found:\n%s\nwant:\n%s", strings.Join(bad, "\n"), strings.Join(want, "\n"))
	}
}

// section is the text of the README section whose heading line is head, up to the next
// heading of its level.
func section(t *testing.T, readme, head string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n"+head+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", head)
	}
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// shellCommands are the commands of the ```sh blocks of text, comments and blank lines left out.
func shellCommands(text string) []string {
	var cmds []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in && strings.HasPrefix(line, "```sh"):
			in = true
		case in && strings.HasPrefix(line, "```"):
			in = false
		case in:
			cmd, _, _ := strings.Cut(line, "#")
			if cmd = strings.Join(strings.Fields(cmd), " "); cmd != "" {
				cmds = append(cmds, cmd)
			}
		}
	}
	return cmds
}

// recipe is the command lines of a Makefile target.
func recipe(t *testing.T, makefile, target string) []string {
	t.Helper()
	lines := strings.Split(makefile, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, target+":") {
			continue
		}
		var cmds []string
		for _, r := range lines[i+1:] {
			if !strings.HasPrefix(r, "\t") {
				break
			}
			cmds = append(cmds, strings.TrimSpace(r))
		}
		return cmds
	}
	t.Fatalf("Makefile has no %s target", target)
	return nil
}

// The README keeps exactly two set-up commands, and keeps them true: `make run` is the main
// job (the whole suite: flowtest run with no selection of its own), `make test` the tests
// (go test of every package), and CI's entry point .ci/run ends by running the second.
func TestReadmeSetUpIsTheTwoCommands(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	read := func(name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	readme, makefile := read("README.md"), read("Makefile")
	if got := shellCommands(section(t, readme, "## Set-up: two commands")); strings.Join(got, "\n") != "make run\nmake test" {
		t.Errorf("README's set-up section gives %q; the guide keeps exactly two commands, make run and make test", got)
	}
	if got := strings.Join(recipe(t, makefile, "run"), "\n"); got != "./$(BIN)/flowtest$(EXE) run $(FLAGS)" {
		t.Errorf("make run runs %q: the README calls it the main job, the whole suite on the sandbox (flowtest run, no selection)", got)
	}
	if got := strings.Join(recipe(t, makefile, "go-test"), "\n"); !strings.Contains(got, "$(GO) test") || !strings.Contains(got, "./...") {
		t.Errorf("make go-test runs %q: the README's test command must run go test of every package", got)
	}
	if got := strings.Join(recipe(t, makefile, "test"), "\n"); !strings.Contains(got, "go-test") {
		t.Errorf("make test runs %q, not go-test", got)
	}
	var last string
	for _, l := range strings.Split(read(".ci/run"), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			last = l
		}
	}
	if last != "make test" {
		t.Errorf(".ci/run ends with %q; CI runs the README's test command, make test", last)
	}
}

// The quick start's commands exist as written: it begins with make build (every ./bin example
// needs it), and each scenario it runs is in the manifest.
func TestReadmeQuickStartRunsWhatExists(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(root, "features", "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := shellCommands(section(t, string(data), "## Quick start: a first green scenario"))
	if len(cmds) == 0 || cmds[0] != "make build" {
		t.Fatalf("the quick start's commands %q do not begin with make build", cmds)
	}
	ran := 0
	for _, c := range cmds[1:] {
		if !strings.HasPrefix(c, "./bin/flowtest ") {
			t.Errorf("quick start command %q is not a ./bin/flowtest command", c)
		}
		if _, tag, ok := strings.Cut(c, "--tags @"); ok {
			id := strings.Fields(tag)[0]
			if !regexp.MustCompile(`(?m)\bid: ` + regexp.QuoteMeta(id) + `[,}\s]`).Match(manifest) {
				t.Errorf("the quick start runs @%s, which is no scenario id of features/manifest.yaml", id)
			}
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("the quick start runs %d scenarios; it shows one", ran)
	}
}
