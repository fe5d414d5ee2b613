package platform

import "context"

// OOMReporter is implemented by instances that can tell whether the
// kernel's OOM killer killed a process of theirs because the instance hit
// its memory limit, so a failure is reported as "out of memory" rather
// than as the bare exit status of a killed process.
type OOMReporter interface {
	OOMKilled(ctx context.Context) (bool, error)
}
