//go:build !amd64

package cpu

func event(maxPrime uint64) uint64 { return eventGo(maxPrime) }
