//go:build !race

package cdktest

const raceEnabled = false
