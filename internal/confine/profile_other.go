//go:build !linux

package confine

import (
	"errors"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// DockerProfile is Linux-only.
func DockerProfile(caps []string) (*specs.LinuxSeccomp, error) {
	return nil, errors.New("seccomp profiles are Linux-only")
}

// DockerProfileJSON is Linux-only.
func DockerProfileJSON() ([]byte, error) {
	return nil, errors.New("seccomp profiles are Linux-only")
}
