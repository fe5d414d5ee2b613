//go:build !linux

package agenthost

import "time"

var epoch = time.Now()

// monotonic is nanoseconds on the process's monotonic clock.
func monotonic() int64 { return int64(time.Since(epoch)) }
