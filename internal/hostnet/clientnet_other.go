//go:build !linux

package hostnet

import (
	"errors"
	"syscall"
)

// holderAttr: network namespaces are Linux's.
func holderAttr() (*syscall.SysProcAttr, error) {
	return nil, errors.New("client network: network namespaces need Linux")
}
