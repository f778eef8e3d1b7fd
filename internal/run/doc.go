// Package run owns the one goroutine-group helper every Apogee component
// uses to start, stop and wait for its goroutines.
//
// A Group counts the goroutines it starts, labels each for pprof, and
// refuses to start one once closing has begun, so that Close returns only
// after every goroutine it ever started has returned. Every is the ticker
// loop most components need: run f every d until the group closes.
//
// Invariants:
//   - Go adds to the wait group only while holding mu and only while the
//     group is open; Stop sets closed under the same mu before anyone
//     waits. So no wg.Add can race the wg.Wait in Wait/Close (the race the
//     sync.WaitGroup documentation forbids).
//   - The group's context is cancelled exactly when closing begins;
//     Done is that context's channel, so goroutines select on it the way
//     they would on a quit channel.
//
// The package starts nothing by itself and holds no global state.
package run
