package agent

import (
	"time"

	"github.com/isobench/isobench/internal/agentproto"
)

// startHeartbeat writes a heartbeat event at once and then every interval
// until the returned stop is called (stop waits until no more is written).
// It runs beside the workload, so a busy workload still beats; a stopped,
// frozen or unreachable agent does not.
func startHeartbeat(w *eventWriter, interval time.Duration) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	w.emit(agentproto.Event{Event: agentproto.EvHeartbeat})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				w.emit(agentproto.Event{Event: agentproto.EvHeartbeat})
			case <-quit:
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
