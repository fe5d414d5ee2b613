//go:build !amd64 && !arm64

package confine

// nativeArch: Compile has no system call table for this architecture.
var nativeArch = arch{}

var sysnum map[string]uint32
