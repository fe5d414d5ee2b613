package builtin

import (
	"github.com/isobench/isobench/internal/platform"
	"github.com/isobench/isobench/internal/platform/docker"
	"github.com/isobench/isobench/internal/platform/dockervm"
	"github.com/isobench/isobench/internal/platform/gvisor"
	"github.com/isobench/isobench/internal/platform/jail"
	"github.com/isobench/isobench/internal/platform/k8s"
	"github.com/isobench/isobench/internal/platform/lxc"
	"github.com/isobench/isobench/internal/platform/lxd"
	"github.com/isobench/isobench/internal/platform/native"
	"github.com/isobench/isobench/internal/platform/nspawn"
	"github.com/isobench/isobench/internal/platform/podman"
	"github.com/isobench/isobench/internal/platform/qemu"
	"github.com/isobench/isobench/internal/platform/runc"
)

func platformFactories() []platform.Factory {
	return []platform.Factory{
		native.Factory,
		docker.Factory,
		runc.RuncFactory,
		runc.CrunFactory,
		nspawn.Factory,
		lxc.Factory,
		qemu.Factory,
		dockervm.Factory, // Docker in a QEMU VM (Docker-Machine)
		podman.Factory,
		gvisor.Factory,
		lxd.Factory,
		jail.Factory, // FreeBSD only: here it is reached with host=ssh://
		k8s.Factory,  // Kubernetes pods (scripts/start-k8s.sh runs a local cluster)
	}
}
