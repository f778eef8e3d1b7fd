//go:build !race

package remoting

// Without the race detector the raw system calls need no annotation
// (race_on.go).
func raceReleaseIO() {}
func raceAcquireIO() {}
