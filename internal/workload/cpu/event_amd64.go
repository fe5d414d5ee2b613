package cpu

// eventAsm is implemented in event_amd64.s.
//
//go:noescape
func eventAsm(maxPrime uint64) uint64

func event(maxPrime uint64) uint64 { return eventAsm(maxPrime) }
