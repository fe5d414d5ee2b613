//go:build !linux

package builtin

import (
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/jail"
	"github.com/isobench/isobench/internal/platform/native"
)

// platformFactories off Linux: the host's own processes (native, without
// cgroup limits) and, on FreeBSD, jails.
func platformFactories() []platform.Factory {
	return []platform.Factory{native.Factory, jail.Factory}
}
