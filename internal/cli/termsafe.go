package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// sanitize makes text from a store or study file safe to print on a
// terminal: control characters other than newline and tab (ESC above all,
// which starts a terminal escape sequence) are shown as \xNN or \uNNNN,
// and invalid UTF-8 as \xNN, so a shared store cannot move the cursor,
// retitle the window or hide what is printed.
func sanitize(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || r == 0x2028 || r == 0x2029:
			if r < 0x100 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || ((unicode.IsControl(r) || r == 0x2028 || r == 0x2029) && r != '\n' && r != '\t') {
			return true
		}
	}
	return false
}

// termSafe is an io.Writer that sanitizes what passes through it. A UTF-8
// sequence split across two writes is held back until it is whole.
type termSafe struct {
	w       io.Writer
	pending []byte
}

func (t *termSafe) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	cut := len(buf)
	// hold back an incomplete rune at the end (at most 3 bytes)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-3; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	t.pending = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(t.w, sanitize(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held-back incomplete sequence (escaped).
func (t *termSafe) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	s := sanitize(string(t.pending))
	t.pending = nil
	_, err := io.WriteString(t.w, s)
	return err
}
