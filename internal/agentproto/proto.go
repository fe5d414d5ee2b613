// Package agentproto is the wire protocol between the host and the isobench
// agent inside an instance: the agent writes one JSON Event per line on
// stdout; the host releases the barrier by writing GoLine on stdin. Both
// sides import it; it imports nothing of theirs.
package agentproto

import (
	"time"

	"github.com/isobench/isobench/internal/sample"
)

// Event is one line of agent output.
type Event struct {
	Event   string            `json:"event"` // hello, heartbeat, ready, started, result, error
	Metrics []sample.Metric   `json:"metrics,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
	Error   string            `json:"error,omitempty"`
	// Clock is the agent's CLOCK_MONOTONIC in nanoseconds: when it
	// answered a PingLine (pong), or when its workload was released
	// (started).
	Clock int64 `json:"clock,omitempty"`
	// Timelines, on a result, are the workload's cumulative work sampled
	// on the agent's clock while it ran (workload.Track), so the host can
	// compute each instance's rate over the window in which every instance
	// of the cell was running.
	Timelines []Timeline `json:"timelines,omitempty"`
}

// Timeline is one metric's cumulative count at instants of the agent's
// CLOCK_MONOTONIC (ns): Clock[0] is when the timed work began (count 0;
// the barrier's release when nothing was done before tracking started),
// the last point when it ended; Clock ascends and Count never falls.
type Timeline struct {
	Metric string    `json:"metric"`
	Clock  []int64   `json:"clock"`
	Count  []float64 `json:"count"`
}

// Event names.
const (
	EvHello   = "hello"
	EvReady   = "ready"
	EvStarted = "started"
	EvResult  = "result"
	EvError   = "error"
	// EvHeartbeat is written every HeartbeatInterval from the start of
	// "agent run" until its result, whatever the workload is doing, so
	// the host can tell a slow instance from a hung or stopped one.
	EvHeartbeat = "heartbeat"
)

// The started event of a deadline release carries WakeTag: WakeRT when the
// agent slept at a realtime priority (SCHED_FIFO 1) and dropped it on
// waking, WakeNormal when it could not (no CAP_SYS_NICE, no RLIMIT_RTPRIO).
const (
	WakeTag    = "wake"
	WakeRT     = "rt"
	WakeNormal = "normal"
)

// HeartbeatInterval is how often the agent writes EvHeartbeat.
const HeartbeatInterval = time.Second

// GoLine releases the barrier.
const GoLine = "go"

// Clock-deadline barrier (issue 20): at the barrier the host may write
// PingLine, which the agent answers at once with an EvPong event carrying
// its clock (the host estimates the clock offset from these), and then
// GoAtPrefix followed by a deadline on the agent's CLOCK_MONOTONIC in
// nanoseconds: the agent releases its workload when its clock reaches it
// (at once if it is past), so instances start together however late each
// one reads the line.
const (
	PingLine   = "ping"
	EvPong     = "pong"
	GoAtPrefix = "go at "
)

// SecretsArg, between "agent run" and the workload's name, says that the
// first line of the agent's standard input is a JSON object of the
// workload's secret parameters (workload.Param.Secret: passwords, private
// keys), which never travel in an argv: /proc/PID/cmdline shows an argv to
// every local user, and exec errors and failure records quote it.
const SecretsArg = "--secrets-stdin"

// CPUsArg, followed by a CPU list ("0", "0-3,6"), between "agent run" and
// the workload's name, binds every thread of the agent to those CPUs
// before the workload starts (duet runs: two platforms at once, each on
// CPUs of its own). The result carries CPUsTag with the list applied.
const (
	CPUsArg = "--cpus="
	CPUsTag = "duet_cpus"
)

// MaxSecretsLine bounds the secrets line the agent reads.
const MaxSecretsLine = 64 << 10
