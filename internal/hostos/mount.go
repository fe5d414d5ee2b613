package hostos

import (
	"strconv"
	"strings"
)

// UnescapeMount undoes the octal escapes of a path in /proc/PID/mountinfo
// or /proc/mounts (\040 for a space, \134 for a backslash).
func UnescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
