package policy

import "io"

// Logger writes the policy's log entries, each one JSON object and a newline in one Write, as
// policy-server reads them (docs/runtime.md "Logs"). It keeps nothing between entries, so that logging
// writes no page of the pre-initialised memory (docs/runtime.md "Pages").
type Logger struct {
	w io.Writer
}

// NewLogger returns a logger writing to w.
func NewLogger(w io.Writer) *Logger { return &Logger{w: w} }

// Entry is the entry being written; fields add members to it.
type Entry struct {
	buf []byte
}

// String adds the member key with the string value.
func (e *Entry) String(key, value string) {
	e.buf = append(e.buf, ',', '"')
	e.buf = appendEscaped(e.buf, key)
	e.buf = append(e.buf, '"', ':', '"')
	e.buf = appendEscaped(e.buf, value)
	e.buf = append(e.buf, '"')
}

// Debug writes an entry of level debug, with the members fields adds (fields may be nil).
func (l *Logger) Debug(msg string, fields func(*Entry)) { l.write("debug", msg, fields) }

// Warn writes an entry of level warning, with the members fields adds (fields may be nil).
func (l *Logger) Warn(msg string, fields func(*Entry)) { l.write("warning", msg, fields) }

func (l *Logger) write(level, msg string, fields func(*Entry)) {
	e := Entry{buf: make([]byte, 0, 256)}
	e.buf = append(e.buf, `{"level":"`...)
	e.buf = append(e.buf, level...)
	e.buf = append(e.buf, `","message":"`...)
	e.buf = appendEscaped(e.buf, msg)
	e.buf = append(e.buf, '"')
	if fields != nil {
		fields(&e)
	}
	e.buf = append(e.buf, '}', '\n')
	_, _ = l.w.Write(e.buf) // as the SDK's writer: a lost line is not an error
}

// appendEscaped appends s as the inside of a JSON string, as onelog's encoder did: quote and backslash
// escaped, \n \f \b \r \t by their letters, other control characters as \u00XX, every other byte as it is.
func appendEscaped(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := range len(s) {
		c := s[i]
		if c >= 0x20 && c != '\\' && c != '"' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		switch c {
		case '\\', '"':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
	}
	return append(dst, s[start:]...)
}
