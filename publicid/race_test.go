//go:build race

package publicid

const raceEnabled = true
