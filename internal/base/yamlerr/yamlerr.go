// Package yamlerr turns a yaml.v3 error into the line it names and a one-line message, so
// that every YAML file flowtest reads (the run-order manifest, network fixtures, gate
// definitions) is refused as "file:line: message"; and it holds the checks of a mapping's
// keys those files share (Keys, Value, KeyLine), so that each refuses them in the same words.
//
// yaml.v3 numbers lines inconsistently: a scanner error ("found character that cannot start
// any token") names the 1-based line, a parser error ("did not find expected key") the
// 0-based line of the construct it was parsing. Line corrects the parser errors, so that
// both name the 1-based line where the construct with the error starts.
package yamlerr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// parserProblems are the messages yaml.v3's parser (not its scanner) reports.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// Line returns the 1-based line err names (0 if none) and its message on one line. Of
// several unmarshal errors the first is returned and the rest counted.
func Line(err error) (int, string) {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		line, msg := split(te.Errors[0])
		if len(te.Errors) > 1 {
			msg += fmt.Sprintf(" (and %d more)", len(te.Errors)-1)
		}
		return line, msg
	}
	line, msg := split(strings.TrimPrefix(err.Error(), "yaml: "))
	for _, p := range parserProblems {
		if msg == p {
			line++ // a parser error: yaml.v3 printed the 0-based line
			break
		}
	}
	return line, msg
}

func split(msg string) (int, string) {
	msg = strings.Join(strings.Fields(msg), " ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n, m[2]
		}
	}
	return 0, msg
}

// Where is how a problem names its place: "file:line", or the file alone for line 0.
func Where(file string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

// Wording is what a file kind says for each way it can fail to be one YAML document holding
// a mapping. Syntax is a format with one %s, yaml.v3's message (see Line).
type Wording struct {
	Empty, Syntax, SecondDocument, NotMapping string
}

// OneMapping decodes data as exactly one YAML document whose root is a mapping and returns the
// document (its mapping is doc.Content[0]). Otherwise problem is the wording's sentence for
// what is wrong, and line the 1-based line it is on (0 if none: an empty file).
func OneMapping(data []byte, w Wording) (doc *yaml.Node, line int, problem string) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	doc = &yaml.Node{}
	if err := dec.Decode(doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, w.Empty
		}
		line, msg := atEnd(data, err)
		return nil, line, fmt.Sprintf(w.Syntax, msg)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, extra.Line, w.SecondDocument
	case !errors.Is(err, io.EOF):
		line, msg := atEnd(data, err)
		return nil, line, fmt.Sprintf(w.Syntax, msg)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, doc.Line, w.NotMapping
	}
	return doc, 0, ""
}

// atEnd is Line for an error in data. yaml.v3 places a problem found at the end of the input
// on the line after the last one (its end-of-stream mark starts a new line), so a file of one
// unclosed line was refused at line 2; such a problem is put on the last line, and said to be
// at the end of the file.
func atEnd(data []byte, err error) (int, string) {
	line, msg := Line(err)
	if last := LastLine(data); line > last {
		return last, msg + " (at the end of the file)"
	}
	return line, msg
}

// LastLine is the number of the last line of data as yaml.v3 counts lines (1 for an empty
// text): a line ends at LF, CRLF, a lone CR, NEL, LS or PS, and a break at the very end starts
// no new line.
func LastLine(data []byte) int {
	n := 1
	for i := 0; i < len(data); {
		size := 0
		switch {
		case bytes.HasPrefix(data[i:], []byte("\r\n")):
			size = 2
		case data[i] == '\r' || data[i] == '\n':
			size = 1
		default:
			for _, b := range []string{"\u0085", "\u2028", "\u2029"} {
				if bytes.HasPrefix(data[i:], []byte(b)) {
					size = len(b)
				}
			}
		}
		if size == 0 {
			i++
			continue
		}
		if i += size; i < len(data) {
			n++
		}
	}
	return n
}

// Keys is what a mapping of a file may hold: its Known keys, What a key is called in a
// refusal ("key", "scenario key"), whether a key given Twice is refused here (else yaml.v3
// refuses it when the mapping is decoded), and a Hint added to an unknown key's refusal.
type Keys struct {
	Known []string
	What  string
	Twice bool
	Hint  func(key string) string
}

// Check refuses, through at, the first key of mapping m that is no name, is not known, or
// (Twice) was given before.
func (k Keys) Check(m *yaml.Node, at func(line int, format string, a ...any) error) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		key := m.Content[i]
		if key.Kind != yaml.ScalarNode {
			return at(key.Line, "a %s must be a name", k.What)
		}
		if !slices.Contains(k.Known, key.Value) {
			hint := ""
			if k.Hint != nil {
				hint = k.Hint(key.Value)
			}
			return at(key.Line, "unknown %s %q (known: %s)%s", k.What, key.Value, strings.Join(k.Known, ", "), hint)
		}
		if !k.Twice {
			continue
		}
		for j := 0; j < i; j += 2 {
			if m.Content[j].Value == key.Value {
				return at(key.Line, "%s %q given twice (first at line %d)", k.What, key.Value, m.Content[j].Line)
			}
		}
	}
	return nil
}

// Value is the value node of key in mapping m, and its key node; nil, nil when m has none.
func Value(m *yaml.Node, key string) (val, keyNode *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1], m.Content[i]
		}
	}
	return nil, nil
}

// KeyLine is the line of key in mapping m; 0 when m has none.
func KeyLine(m *yaml.Node, key string) int {
	if _, k := Value(m, key); k != nil {
		return k.Line
	}
	return 0
}
