package worker

// The line codec of tare's worker protocol, version 1 (docs/protocol.md): one message is one
// line `verb key=value ...` ending in "\n", values percent-encoded. Hand-written because it is
// forty lines and the module has no dependencies; nothing here knows about kernels.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxLine is the protocol's limit on one message, newline included.
const maxLine = 65536

// message is one decoded line: a verb and its fields in order.
type message struct {
	verb   string
	keys   []string
	fields map[string]string
}

func (m *message) get(key string) (string, bool) {
	v, ok := m.fields[key]
	return v, ok
}

// unreserved reports whether byte c is written as itself in a value.
func unreserved(c byte) bool {
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		strings.IndexByte("-._~:/,+", c) >= 0
}

// encodeValue percent-encodes every byte outside the protocol's unreserved set.
func encodeValue(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// decodeValue undoes encodeValue; upper- or lowercase hex digits are accepted.
func decodeValue(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("truncated %%-escape in %q", s)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("bad %%-escape in %q", s)
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), nil
}

func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// validName reports whether s is a legal kernel or parameter name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '_' || c == '.' || c == '/' || c == '-') {
			return false
		}
	}
	return true
}

// decodeLine parses one line (without its newline).
func decodeLine(line string) (*message, error) {
	if line == "" {
		return nil, errors.New("empty line")
	}
	parts := strings.Split(line, " ")
	m := &message{verb: parts[0], fields: map[string]string{}}
	if !validKey(m.verb) {
		return nil, fmt.Errorf("bad verb %q", m.verb)
	}
	for _, p := range parts[1:] {
		eq := strings.IndexByte(p, '=')
		if eq < 0 {
			return nil, fmt.Errorf("field %q has no '='", p)
		}
		k := p[:eq]
		if !validKey(k) {
			return nil, fmt.Errorf("bad key %q", k)
		}
		if _, dup := m.fields[k]; dup {
			return nil, fmt.Errorf("key %q repeats", k)
		}
		v, err := decodeValue(p[eq+1:])
		if err != nil {
			return nil, err
		}
		m.keys = append(m.keys, k)
		m.fields[k] = v
	}
	return m, nil
}

// encodeLine writes verb and key/value pairs (kv alternates key, value) as one line with "\n".
func encodeLine(verb string, kv ...string) string {
	var b strings.Builder
	b.WriteString(verb)
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteByte(' ')
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(encodeValue(kv[i+1]))
	}
	b.WriteByte('\n')
	return b.String()
}

// errLineTooLong is returned by readLine for a line over maxLine bytes.
var errLineTooLong = errors.New("line longer than 65536 bytes")

// readLine reads one line without its "\n"; io.EOF at a clean end of input.
func readLine(r *bufio.Reader) (string, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return "", errLineTooLong
		}
		if err == nil {
			return string(buf[:len(buf)-1]), nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(buf) > 0 {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
}
