package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/joho/godotenv"
)

// ReadDotEnv reads a .env file. A missing file is an empty one unless mustExist (the user
// named the file explicitly). Malformed content is an error naming file:line; see
// ParseDotEnv.
func ReadDotEnv(path string, mustExist bool) (map[string]string, bool, error) {
	if path == "" {
		return map[string]string{}, false, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !mustExist:
		return map[string]string{}, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read .env file: %w", err)
	}
	m, err := ParseDotEnv(path, b)
	return m, true, err
}

// ParseDotEnv parses .env content; name (the file) starts every error, with the line:
// "path/.env:7: …". Values are read by godotenv (quotes, escapes, ${VAR} expansion, inline
// comments), but before that every statement is checked here, line by line, because
// godotenv's own errors carry no line and it accepts some mistakes silently:
//
//   - a statement is [export ]NAME=VALUE (or NAME: VALUE, as godotenv allows); NAME is ASCII
//     letters, digits, '_' and '.', not starting with a digit;
//   - blank lines and lines starting with '#' are skipped; a leading UTF-8 BOM is ignored;
//   - a value starting with ' or " ends at the next such quote not preceded by a backslash
//     (it may span lines); only spaces and a # comment may follow it on its line
//     (godotenv would read `A="x" B=1` as two variables);
//   - a name set twice is refused, naming both lines (godotenv keeps the last one silently,
//     so an edit of the first would have no effect);
//   - a carriage return not followed by a line feed is refused (godotenv reads it as a line
//     end in one place and as a space in another).
//
// Finally the names godotenv read must be exactly the names found here, so that the two
// readings can never disagree about what the file sets.
func ParseDotEnv(name string, data []byte) (map[string]string, error) {
	at := func(line int, format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
	}
	data, err := normalizeDotEnv(data, at)
	if err != nil {
		return nil, err
	}
	order, err := dotEnvNames(strings.Split(string(data), "\n"), at)
	if err != nil {
		return nil, err
	}
	out, err := godotenv.UnmarshalBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", name, collapseWhitespace(err.Error()))
	}
	var got []string
	for k := range out {
		got = append(got, k)
	}
	slices.Sort(got)
	want := slices.Clone(order)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return nil, fmt.Errorf("%s: godotenv reads the names %s where each line sets %s; simplify the quoting", name, clip(strings.Join(got, ",")), clip(strings.Join(want, ",")))
	}
	return out, nil
}

// normalizeDotEnv drops a UTF-8 byte order mark and turns CRLF into LF, refusing what no
// reading would agree on: UTF-16, a NUL byte, a carriage return without a line feed.
func normalizeDotEnv(data []byte, at func(int, string, ...any) error) ([]byte, error) {
	// Windows editors save UTF-16 as "Unicode": refused with what to do, not as a name of
	// odd bytes; a NUL byte (UTF-16 without its mark, or a stray one) is in no variable's value
	// the process environment can carry.
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return nil, at(1, "the file is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8")
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, at(bytes.Count(data[:i], []byte("\n"))+1, "a NUL byte, which no environment variable can hold (is the file UTF-16?)")
	}
	// A CR not followed by LF is a line end to godotenv in one place and a space in another
	// (`A=\rB=` sets A to "B="): refused rather than guessed.
	if i := bytes.IndexByte(data, '\r'); i >= 0 {
		return nil, at(bytes.Count(data[:i], []byte("\n"))+1, "a carriage return without a line feed (save the file with LF or CRLF line ends)")
	}
	return data, nil
}

// dotEnvNames reads the names the lines set, in order, by the rules of ParseDotEnv.
func dotEnvNames(lines []string, at func(int, string, ...any) error) ([]string, error) {
	firstLine := map[string]int{}
	var order []string
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		text := strings.TrimLeftFunc(lines[i], isDotEnvSpace)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if rest, ok := strings.CutPrefix(text, "export"); ok && rest != "" && isBlank(rest[0]) {
			text = strings.TrimLeftFunc(rest, isDotEnvSpace)
		}
		sep := strings.IndexAny(text, "=:")
		if sep < 0 {
			return nil, at(lineNo, "%q is not NAME=VALUE", clip(lines[i]))
		}
		key := strings.TrimRightFunc(text[:sep], isDotEnvSpace)
		if err := checkDotEnvName(key); err != nil {
			return nil, at(lineNo, "%v", err)
		}
		if prev, dup := firstLine[key]; dup {
			return nil, at(lineNo, "%s is set twice (first at line %d); only the last would count", key, prev)
		}
		firstLine[key] = lineNo
		order = append(order, key)
		value := strings.TrimLeftFunc(text[sep+1:], isDotEnvSpace)
		if value == "" || (value[0] != '"' && value[0] != '\'') {
			continue
		}
		end, err := quotedValueEnd(lines, i, key, value, at)
		if err != nil {
			return nil, err
		}
		i = end
	}
	return order, nil
}

// quotedValueEnd finds the end of key's quoted value, which starts on lines[i], and returns
// the index of the line it ends on; only spaces and a # comment may follow the quote.
func quotedValueEnd(lines []string, i int, key, value string, at func(int, string, ...any) error) (int, error) {
	quote := value[0]
	rest := value[1:]
	startLine := i + 1
	for {
		end := closingQuote(rest, quote)
		if end >= 0 {
			after := strings.TrimLeftFunc(rest[end+1:], isDotEnvSpace)
			if after != "" && !strings.HasPrefix(after, "#") {
				return 0, at(i+1, "text %q after the closing quote of %s (quote the whole value, or start a comment with #)", clip(after), key)
			}
			return i, nil
		}
		// Does the quote close on a later line? godotenv searches on across line
		// breaks; the byte before a line's first byte is the newline, never a backslash.
		i++
		if i >= len(lines) {
			return 0, at(startLine, "the value of %s starts with %c and never ends (no closing %c)", key, quote, quote)
		}
		rest = "\n" + lines[i]
	}
}

// closingQuote is the index in s of the first quote not preceded by a backslash, as godotenv
// finds it, or -1.
func closingQuote(s string, quote byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == quote && (i == 0 || s[i-1] != '\\') {
			return i
		}
	}
	return -1
}

func checkDotEnvName(key string) error {
	if key == "" {
		return errors.New("a line starts with '=' or ':' but has no variable name")
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		ok := c == '_' || c == '.' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !ok {
			return fmt.Errorf("variable name %q has %q (names are letters, digits, '_' and '.')", clip(key), string(rune(key[i])))
		}
	}
	if key[0] >= '0' && key[0] <= '9' {
		return fmt.Errorf("variable name %q starts with a digit", clip(key))
	}
	return nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' }

// isDotEnvSpace is godotenv's "space": blank but not a line break, including NEL and NBSP,
// so that values are trimmed here exactly as godotenv trims them.
func isDotEnvSpace(r rune) bool {
	switch r {
	case '\t', '\v', '\f', '\r', ' ', 0x85, 0xA0:
		return true
	}
	return false
}

// clip keeps an excerpt short and on one line.
func clip(s string) string {
	s = collapseWhitespace(s)
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// collapseWhitespace puts s on one line with single spaces (godotenv errors span lines).
func collapseWhitespace(s string) string { return strings.Join(strings.Fields(s), " ") }
