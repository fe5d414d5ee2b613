//go:build !linux

package builtin

import "github.com/isobench/isobench/internal/platform"

// platformFactories: off Linux this binary is an agent (it runs workloads
// inside an instance or a FreeBSD jail driven over SSH); no platform runs
// from here yet.
func platformFactories() []platform.Factory { return nil }
