package run

import (
	"crypto/rand"
	"encoding/binary"
)

// Seed is the seed a scripted run draws its branches from: the one asked for, or a fresh
// one, so that successive runs of one script sample like successive runs against a real
// model. It is written to recipe.json and the report: a run replays from it (--seed).
func Seed(asked int64) int64 {
	if asked != 0 {
		return asked
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("run: no randomness for a run's seed: " + err.Error())
	}
	// Positive and non-zero: 0 means "not given" on the command line.
	return int64(binary.BigEndian.Uint64(b[:])>>2) + 1
}
