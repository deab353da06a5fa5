// Package leaktest finds goroutines that a component left behind after its
// Close or Shutdown returned. Tests name the component by the functions its
// goroutines run (a package path or a method), so goroutines of unrelated
// parts of the process (the test harness, other packages' pools) do not
// count.
//
// It does not import testing: a test turns its error into t.Fatal.
package leaktest

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// Wait polls every goroutine's stack until none mentions any of match, and
// returns nil; or, once timeout has passed, an error carrying the stacks
// that still do. The goroutine calling Wait is never counted.
func Wait(timeout time.Duration, match ...string) error {
	deadline := time.Now().Add(timeout)
	for {
		left := Find(match...)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d goroutines still running %v after %v:\n\n%s",
				len(left), match, timeout, strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond) // polling, with the deadline above
	}
}

// Find returns the stacks of the goroutines, other than the caller's, whose
// stack mentions any of match.
func Find(match ...string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	// runtime.Stack lists the caller's goroutine first, then the others,
	// each a block separated by a blank line.
	blocks := strings.Split(string(buf), "\n\n")
	var left []string
	for _, g := range blocks[1:] {
		for _, m := range match {
			if strings.Contains(g, m) {
				left = append(left, g)
				break
			}
		}
	}
	return left
}
