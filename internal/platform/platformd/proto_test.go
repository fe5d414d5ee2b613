package platformd

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/isobench/isobench/internal/platform"
)

// TestRemoteErrors: the error kinds the runner and the suite look for
// survive the wire.
func TestRemoteErrors(t *testing.T) {
	for _, err := range []error{
		&platform.ExitError{Code: 3, Argv: []string{"sh"}},
		errors.Join(errors.New("docker: network=nat"), platform.ErrUnsupported),
		context.Canceled,
		context.DeadlineExceeded,
	} {
		got := toWireErr(err).err()
		if got.Error() != err.Error() && !strings.Contains(got.Error(), "exited with status 3") {
			t.Errorf("message %q became %q", err, got)
		}
		for _, sentinel := range []error{platform.ErrUnsupported, context.Canceled, context.DeadlineExceeded} {
			if errors.Is(err, sentinel) != errors.Is(got, sentinel) {
				t.Errorf("%v: errors.Is(%v) changed across the wire", err, sentinel)
			}
		}
		var a, b *platform.ExitError
		if errors.As(err, &a) != errors.As(got, &b) || (a != nil && a.Code != b.Code) {
			t.Errorf("%v: ExitError changed across the wire: %v", err, got)
		}
	}
	if toWireErr(nil).err() != nil {
		t.Error("nil error did not stay nil")
	}
}
