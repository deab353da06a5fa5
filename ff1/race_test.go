//go:build race

package ff1

// raceEnabled: under the race detector sync.Pool drops items at random on
// purpose, so allocation counts are not meaningful there.
const raceEnabled = true
