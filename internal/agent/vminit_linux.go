package agent

import (
	"context"
	"io"

	"github.com/isobench/isobench/internal/guest"
)

func vmInit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return guest.Main(ctx, args, stdout, stderr)
}
