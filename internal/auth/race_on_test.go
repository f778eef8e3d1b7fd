//go:build race

package auth

// raceEnabled: sync.Pool drops items at random under -race, so allocation
// counts are not meaningful there.
const raceEnabled = true
