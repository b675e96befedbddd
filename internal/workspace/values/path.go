package values

import (
	"fmt"
	"strings"
)

// PathError is a syntax error in a values path.
type PathError struct {
	// Path is the text that failed to parse.
	Path string
	// Pos is the 1-based byte position of the offending character; one
	// past the end for errors at the end of the path.
	Pos int
	// Msg says what is wrong.
	Msg string
}

// Error returns `path "<path>": <msg> at position <pos>`.
func (e *PathError) Error() string {
	return fmt.Sprintf("path %q: %s at position %d", e.Path, e.Msg, e.Pos)
}

// ParsePath splits a values path ("JSONPath-lite") into its keys.
//
// A path is a sequence of segments. A plain segment is a run of characters
// other than '.', '[', ']', quotes, backslashes, whitespace and control
// characters; plain segments are separated by dots. A bracket segment is a
// key in double or single quotes inside brackets, for keys that hold dots,
// slashes or any other character: `a.b["nvidia.com/gpu"]`, `x["a.b"].y`.
// Inside the quotes a backslash escapes the quote character or a
// backslash. A bracket segment follows the previous segment directly (no
// dot) and may start the path.
//
// Empty segments (`a..b`, `.a`, `[""]`), a trailing dot, an unterminated
// bracket or quote, unquoted bracket content (`a[0]`: list indexes are not
// supported) and anything but '.', '[' or the end after a bracket are
// errors; the error is a *PathError naming the position.
func ParsePath(p string) ([]string, error) {
	fail := func(pos int, format string, args ...any) ([]string, error) {
		return nil, &PathError{Path: p, Pos: pos + 1, Msg: fmt.Sprintf(format, args...)}
	}
	if p == "" {
		return fail(0, "empty path")
	}
	var segs []string
	i := 0
	for i < len(p) {
		switch c := p[i]; {
		case c == '[':
			key, next, err := parseBracket(p, i)
			if err != nil {
				return nil, err
			}
			segs = append(segs, key)
			i = next
			if i < len(p) && p[i] != '.' && p[i] != '[' {
				return fail(i, "expected '.' or '[' after ']', found %q", p[i])
			}
		case c == '.':
			if len(segs) == 0 {
				return fail(i, "empty segment")
			}
			i++
			if i == len(p) {
				return fail(i-1, "trailing dot")
			}
			if p[i] == '.' {
				return fail(i, "empty segment")
			}
			if p[i] == '[' {
				return fail(i, "empty segment (a bracket segment follows its key without a dot)")
			}
			fallthrough
		default:
			start := i
			for i < len(p) && plainByte(p[i]) {
				i++
			}
			if i == start {
				return fail(i, "unexpected %q (quote the key in brackets: [\"...\"])", p[i])
			}
			segs = append(segs, p[start:i])
			if i < len(p) && p[i] != '.' && p[i] != '[' {
				return fail(i, "unexpected %q (quote the key in brackets: [\"...\"])", p[i])
			}
		}
	}
	return segs, nil
}

// parseBracket parses the bracket segment starting at p[open] == '['. It
// returns the key and the index after the closing bracket.
func parseBracket(p string, open int) (string, int, error) {
	fail := func(pos int, msg string) (string, int, error) {
		return "", 0, &PathError{Path: p, Pos: pos + 1, Msg: msg}
	}
	i := open + 1
	if i == len(p) {
		return fail(open, "unterminated bracket")
	}
	quote := p[i]
	if quote != '"' && quote != '\'' {
		if p[i] == ']' {
			return fail(i, "empty brackets")
		}
		return fail(i, "unquoted bracket content (write [\"key\"]; list indexes are not supported)")
	}
	var key strings.Builder
	for i++; ; i++ {
		if i >= len(p) {
			return fail(open, "unterminated quote")
		}
		c := p[i]
		if c == quote {
			break
		}
		if c == '\\' {
			i++
			if i >= len(p) {
				return fail(open, "unterminated quote")
			}
			if p[i] != '"' && p[i] != '\'' && p[i] != '\\' {
				return fail(i-1, `invalid escape (only \", \' and \\ are allowed)`)
			}
		}
		key.WriteByte(p[i])
	}
	closeQuote := i
	i++
	if i >= len(p) {
		return fail(open, "unterminated bracket")
	}
	if p[i] != ']' {
		return fail(i, "expected ']' after the quoted key")
	}
	if key.Len() == 0 {
		return fail(closeQuote-1, "empty segment")
	}
	return key.String(), i + 1, nil
}

// plainByte reports whether c may appear in a plain (unbracketed) segment.
func plainByte(c byte) bool {
	switch c {
	case '.', '[', ']', '"', '\'', '\\', ' ', 0x7f:
		return false
	}
	return c > ' '
}

// FormatPath renders keys as a path that ParsePath turns back into the same
// keys: plain segments joined by dots where possible, ["..."] otherwise
// (keys holding dots or slashes included, for readability). An empty key
// renders as [""], which does not parse.
func FormatPath(path []string) string {
	var b strings.Builder
	for i, seg := range path {
		if seg != "" && !strings.Contains(seg, "/") && strings.IndexFunc(seg, func(r rune) bool {
			return r < 0x80 && !plainByte(byte(r))
		}) < 0 {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(seg)
			continue
		}
		b.WriteString(`["`)
		for j := 0; j < len(seg); j++ {
			if seg[j] == '"' || seg[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(seg[j])
		}
		b.WriteString(`"]`)
	}
	return b.String()
}

// SetPath writes v at path in values, creating the intermediate maps and
// replacing any non-map value that stands on the way. It modifies values in
// place and stores v itself (no copy). previous is the value the write
// displaced: the old value at the path, or else the first non-map value
// that stood at an intermediate key; existed reports whether there was one
// (a JSON null counts). A nil values map or an empty path writes nothing.
func SetPath(values map[string]any, path []string, v any) (previous any, existed bool) {
	if values == nil || len(path) == 0 {
		return nil, false
	}
	m := values
	for _, key := range path[:len(path)-1] {
		next, ok := m[key].(map[string]any)
		if !ok {
			if old, present := m[key]; present && !existed {
				previous, existed = old, true
			}
			next = map[string]any{}
			m[key] = next
		}
		m = next
	}
	last := path[len(path)-1]
	if old, present := m[last]; present && !existed {
		previous, existed = old, true
	}
	m[last] = v
	return previous, existed
}

// LookupPath returns the value at path in values and whether it exists.
// The value is not copied.
func LookupPath(values map[string]any, path []string) (any, bool) {
	if len(path) == 0 {
		return nil, false
	}
	m := values
	for _, key := range path[:len(path)-1] {
		next, ok := m[key].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	v, ok := m[path[len(path)-1]]
	return v, ok
}

// deletePath removes the value at path from values and then every map on
// the way that the removal left empty. It reports whether there was a value.
func deletePath(values map[string]any, path []string) bool {
	if len(path) == 0 {
		return false
	}
	key := path[0]
	if len(path) == 1 {
		_, ok := values[key]
		delete(values, key)
		return ok
	}
	child, ok := values[key].(map[string]any)
	if !ok || !deletePath(child, path[1:]) {
		return false
	}
	if len(child) == 0 {
		delete(values, key)
	}
	return true
}
