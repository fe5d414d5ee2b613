// Package agentproto is the wire protocol between the host and the isobench
// agent inside an instance: the agent writes one JSON Event per line on
// stdout; the host releases the barrier by writing GoLine on stdin. Both
// sides import it; it imports nothing of theirs.
package agentproto

import "github.com/isobench/isobench/internal/sample"

// Event is one line of agent output.
type Event struct {
	Event   string            `json:"event"` // hello, ready, started, result, error
	Metrics []sample.Metric   `json:"metrics,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
	Error   string            `json:"error,omitempty"`
}

// Event names.
const (
	EvHello   = "hello"
	EvReady   = "ready"
	EvStarted = "started"
	EvResult  = "result"
	EvError   = "error"
)

// GoLine releases the barrier.
const GoLine = "go"
