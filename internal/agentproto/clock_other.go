//go:build !linux

package agentproto

import "time"

var epoch = time.Now()

// Monotonic is nanoseconds on the process's monotonic clock.
func Monotonic() int64 { return int64(time.Since(epoch)) }
