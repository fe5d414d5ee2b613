package service

import (
	"slices"
	"strconv"
	"time"

	"github.com/isobench/isobench/internal/sample"
)

// Two readiness metrics describe a service's start:
//
//   - ready_ms, measured inside the instance by the agent: from starting
//     the server process to its first good answer (the server's own
//     start-up).
//   - instance_ready_ms, measured on the host: from just before the server
//     instance is created to the moment the host learns the service answers
//     (the agent's ready event), less the untimed steps in between that are
//     isobench's bookkeeping rather than the service's start (asking the
//     platform for the instance's facts, oltp's prepared table unpacked
//     into the instance, a transfer's data set or http's served file
//     written inside it). It is what a user of the
//     platform waits from "start an instance" to "the service answers":
//     instance creation and boot, the agent's start, the server's own
//     initialisation (MariaDB's mariadb-install-db on a fresh data
//     directory) and ready_ms.
const (
	ReadyMetric         = "ready_ms"
	InstanceReadyMetric = "instance_ready_ms"
)

// SetupMetric is the in-guest untimed setup (ms) an agent half reports
// beside ready_ms; the host subtracts it from instance_ready_ms and drops
// it from the results (WithInstanceReady).
const SetupMetric = "untimed_setup_ms"

// Setup is an in-guest half's report of its untimed setup, d.
func Setup(d time.Duration) sample.Metric {
	return sample.Metric{Name: SetupMetric, Value: float64(d.Microseconds()) / 1000, Unit: "ms", Better: sample.Lower, Agg: sample.None}
}

// WithInstanceReady returns the guest's metrics ms without SetupMetric and
// with instance_ready_ms: hostReady (instance creation to the ready event,
// host-side untimed steps already taken out) less the guest's untimed
// setup. A result without ready_ms (an aborted server) is returned as is.
func WithInstanceReady(ms []sample.Metric, hostReady time.Duration) []sample.Metric {
	setup := 0.0
	hasReady := false
	out := slices.DeleteFunc(slices.Clone(ms), func(m sample.Metric) bool {
		switch m.Name {
		case SetupMetric:
			setup += m.Value
			return true
		case ReadyMetric:
			hasReady = true
		}
		return false
	})
	if !hasReady {
		return out
	}
	v := float64(hostReady.Microseconds())/1000 - setup
	return append(out, sample.Metric{Name: InstanceReadyMetric, Value: v, Unit: "ms", Better: sample.Lower, Agg: sample.None})
}

// slowAccel reports whether an instance's facts say it is a VM under
// emulation (QEMU's TCG: the guest's CPU is interpreted, every step of a
// server's start takes many times longer).
func slowAccel(facts map[string]string) bool { return facts["accel"] == "tcg" }

// ReadyTimeout is how long a server in an instance with these facts may
// take to answer: def, or ten times it under emulation.
func ReadyTimeout(facts map[string]string, def time.Duration) time.Duration {
	if slowAccel(facts) {
		return 10 * def
	}
	return def
}

// DurationParam formats d as a workload duration parameter (seconds).
func DurationParam(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}
