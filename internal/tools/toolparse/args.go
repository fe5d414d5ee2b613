package toolparse

import (
	"math"
	"strconv"
	"time"
)

// Seconds renders d for a tool's command line that takes whole seconds
// (ab -t and -s, wrk -d and --timeout, sysbench --time): rounded up, never
// below one.
func Seconds(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}
