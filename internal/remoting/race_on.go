//go:build race

package remoting

import (
	"runtime"
	"unsafe"
)

// ioSync stands for every byte written to and read from a socket by the
// raw system calls (trywrite_unix.go): the race detector does not see the
// kernel carry a request from one goroutine to another, so a write
// releases it and a read acquires it, as package syscall does for its own
// Read and Write. Without it, a test that changes state and then sends a
// request is reported as racing with the handler that reads the state.
var ioSync int64

func raceReleaseIO() { runtime.RaceReleaseMerge(unsafe.Pointer(&ioSync)) }
func raceAcquireIO() { runtime.RaceAcquire(unsafe.Pointer(&ioSync)) }
