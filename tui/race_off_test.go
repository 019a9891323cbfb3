//go:build !race

package tui

// raceOn: the race detector slows everything several times; timing limits do not apply.
const raceOn = false
