// Package par runs a function for 0..n-1 concurrently.
package par

import (
	"errors"
	"sync"
)

// Each runs f(0..n-1) concurrently, waits for all, and joins their errors.
func Each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) { defer wg.Done(); errs[i] = f(i) }(i)
	}
	wg.Wait()
	return errors.Join(errs...)
}
