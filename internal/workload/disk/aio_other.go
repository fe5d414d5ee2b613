//go:build !(linux && (amd64 || arm64))

package disk

import (
	"context"
	"errors"
	"time"
)

// runAIO is only implemented for Linux on amd64 and arm64.
func runAIO(ctx context.Context, j *job, bufs [][]byte, seed uint64, deadline time.Time) error {
	return errors.New("disk: engine=aio needs Linux on amd64 or arm64; rerun with engine=threads")
}
