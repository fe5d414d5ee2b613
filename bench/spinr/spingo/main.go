// spingo is bench/spinr in Go: the machine's own conservation for a Go
// program, without isobench. THREADS goroutines run sysbench cpu's event
// (primes up to 10,000), each counting eighths of an event as it does
// them into its own slot of a shared file, and all wait for one byte on
// stdin (the release). spinr.py releases 1 and 32 of them together and
// reads their counts from outside, as it does spinr's.
//
// It exists because a Go process is not a C process on a crowded CPU:
// the Go runtime's monitor thread (sysmon) wakes about every 10 ms while
// any goroutine runs, so 32 Go processes pay 32 times the wakeups of one
// for the same work. isobench's agent is a Go program, and its
// conservation is compared with this, beside the C program's.
package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"
)

const (
	parts    = 8
	maxPrime = 10000
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: spingo THREADS COUNTFILE < release")
		os.Exit(2)
	}
	t, err := strconv.Atoi(os.Args[1])
	if err != nil || t < 1 {
		fmt.Fprintln(os.Stderr, "spingo: THREADS must be a positive integer")
		os.Exit(2)
	}
	f, err := os.OpenFile(os.Args[2], os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		err = f.Truncate(int64(64 * t))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "spingo:", err)
		os.Exit(1)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 64*t, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		fmt.Fprintln(os.Stderr, "spingo:", err)
		os.Exit(1)
	}
	var b [parts + 1]uint64
	b[0], b[parts] = 3, maxPrime
	for k := 1; k < parts; k++ {
		b[k] = uint64(maxPrime * math.Pow(float64(k)/parts, 2.0/3))
	}
	release := make(chan struct{})
	for i := 0; i < t; i++ {
		slot := (*uint64)(unsafe.Pointer(&mem[64*i])) // a cache line each
		go func() {
			<-release
			for {
				var n uint64
				for k := 0; k < parts; k++ {
					for c := b[k]; c < b[k+1]; c++ {
						r := uint64(math.Sqrt(float64(c)))
						l := uint64(2)
						for ; l <= r; l++ {
							if c%l == 0 {
								break
							}
						}
						if l > r {
							n++
						}
					}
					atomic.AddUint64(slot, 1)
				}
				if n == 0 {
					panic("no primes") // keeps the loop
				}
			}
		}()
	}
	var c [1]byte
	if n, _ := os.Stdin.Read(c[:]); n != 1 {
		os.Exit(1)
	}
	close(release)
	select {}
}
