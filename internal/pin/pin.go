// Package pin binds the calling goroutine's OS thread to one CPU, as
// taskset -c or netperf -T do, for the network workloads' ends and for
// the tools they are compared with.
package pin

// None means "leave the thread where the scheduler puts it".
const None = -1
