//go:build !linux

package agent

import (
	"time"

	"github.com/isobench/isobench/internal/agentproto"
)

// sleepUntil blocks until agentproto.Monotonic() reaches deadline and returns it
// (never with a realtime wake here).
func sleepUntil(deadline int64) (int64, bool, error) {
	if d := deadline - agentproto.Monotonic(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	return agentproto.Monotonic(), false, nil
}
