package confine

import (
	"encoding/json"
	"fmt"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DockerProfile is Docker's default seccomp profile (moby's, the one
// dockerd writes into its bundles) for a process whose bounding set is
// caps, on this architecture and kernel: an allowlist, EPERM for the rest.
func DockerProfile(caps []string) (*specs.LinuxSeccomp, error) {
	spec := &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: caps}}}
	p, err := seccomp.GetDefaultProfile(spec)
	if err != nil {
		return nil, fmt.Errorf("default seccomp profile: %w", err)
	}
	return p, nil
}

// DockerProfileJSON is Docker's default seccomp profile in the
// seccomp.json format Docker and Podman read (--security-opt
// seccomp=FILE), as dockerd embeds it: the engine that reads it resolves
// its rules for the container's capabilities and the kernel.
func DockerProfileJSON() ([]byte, error) {
	b, err := json.MarshalIndent(seccomp.DefaultProfile(), "", "\t")
	if err != nil {
		return nil, fmt.Errorf("default seccomp profile: %w", err)
	}
	return b, nil
}
