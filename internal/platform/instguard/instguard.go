// Package instguard holds the guards the instances of several platforms
// share around their lifecycle: Close cleans up once, and Exec refuses an
// empty command and a closed instance. It imports nothing of isobench's.
package instguard

import (
	"errors"
	"fmt"
	"sync"
)

// First marks *closed under mu and reports whether this call set it: the
// first Close, which cleans up; a later one returns at once.
func First(mu *sync.Mutex, closed *bool) bool {
	mu.Lock()
	defer mu.Unlock()
	if *closed {
		return false
	}
	*closed = true
	return true
}

// Closed reads *closed under mu.
func Closed(mu *sync.Mutex, closed *bool) bool {
	mu.Lock()
	defer mu.Unlock()
	return *closed
}

// Exec is the check before an instance of engine named name runs argv: an
// error when argv is empty ("ENGINE: empty command") or, asking closed
// only then, when the instance is closed ("ENGINE: instance NAME is
// closed"); nil when argv may run.
func Exec(engine, name string, argv []string, closed func() bool) error {
	if len(argv) == 0 {
		return errors.New(engine + ": empty command")
	}
	if closed() {
		return fmt.Errorf("%s: instance %s is closed", engine, name)
	}
	return nil
}
