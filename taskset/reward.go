package taskset

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The verifier's reward files, written by tests/test.sh into /logs/verifier.
const (
	RewardText = "reward.txt"
	RewardJSON = "reward.json"
)

// DefaultPassAt is the reward at or above which a verdict passes unless --pass-at says other.
const DefaultPassAt = 1.0

// maxRewardBytes caps a reward file: a number, or a handful of named numbers.
const maxRewardBytes = 64 << 10

// Outcome is what a reward says of a tail.
type Outcome int

// The outcomes. NoVerdict is "the check could not run": the verifier left no usable reward,
// which says nothing about the agent and must never count as a failure.
const (
	NoVerdict Outcome = iota
	Passed
	Failed
)

// String names the outcome as reports show it.
func (o Outcome) String() string {
	switch o {
	case Passed:
		return "passed"
	case Failed:
		return "failed"
	}
	return "no verdict"
}

// Reward is the verifier's reward, read.
type Reward struct {
	// Outcome is the verdict, or NoVerdict.
	Outcome Outcome
	// Value is the main reward; a non-binary one is kept as a score.
	Value float64
	// Scores are reward.json's named numbers, the main one included; nil for reward.txt.
	Scores map[string]float64
	// File is the reward file read, or "" when none was.
	File string
	// Why says, for NoVerdict, what was wrong with the reward.
	Why string
}

// ReadReward reads the reward the verifier left in dir: reward.txt (one number) if present,
// else reward.json, an object of named numbers whose main one is "reward" (or its only key),
// the order Harbor reads them in. The files are opened without following links and without
// blocking, and must be small regular files. A reward at or above passAt passes. A missing,
// linked, oversized, garbled, NaN or infinite reward is NoVerdict, never Failed. passAt is
// DefaultPassAt or the user's --pass-at, which its flag parser must check is a finite number.
func ReadReward(dir string, passAt float64) Reward {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Reward{Why: fmt.Sprintf("%s: the verifier's log folder cannot be opened (%v)", dir, err)}
	}
	defer unix.Close(dfd)

	r, ok := readRewardFile(dfd, dir, RewardText, parseText)
	if !ok {
		r, ok = readRewardFile(dfd, dir, RewardJSON, parseJSON)
	}
	if !ok {
		return Reward{Why: fmt.Sprintf("%s: the verifier wrote neither %s nor %s", dir, RewardText, RewardJSON)}
	}
	if r.Why != "" {
		return r
	}
	if r.Value >= passAt {
		r.Outcome = Passed
	} else {
		r.Outcome = Failed
	}
	return r
}

// readRewardFile reads one reward file; ok is false only when the file is absent.
func readRewardFile(dfd int, dir, name string, parse func([]byte) (float64, map[string]float64, error)) (Reward, bool) {
	r := Reward{File: name}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case err == unix.ENOENT:
		return r, false
	case err == unix.ELOOP:
		r.Why = fmt.Sprintf("%s/%s: is a link; the reward must be a file", dir, name)
		return r, true
	case err != nil:
		r.Why = fmt.Sprintf("%s/%s: cannot be opened (%v)", dir, name, err)
		return r, true
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		r.Why = fmt.Sprintf("%s/%s: is not a regular file", dir, name)
		return r, true
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRewardBytes+1))
	if err != nil {
		r.Why = fmt.Sprintf("%s/%s: cannot be read (%v)", dir, name, err)
		return r, true
	}
	if len(data) > maxRewardBytes {
		r.Why = fmt.Sprintf("%s/%s: is larger than %d bytes", dir, name, maxRewardBytes)
		return r, true
	}
	r.Value, r.Scores, err = parse(data)
	if err != nil {
		r.Why = fmt.Sprintf("%s/%s: %v", dir, name, err)
	}
	return r, true
}

// parseText reads reward.txt: one finite number and whitespace.
func parseText(data []byte) (float64, map[string]float64, error) {
	s := strings.TrimSpace(string(data))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("%q is not a number", truncate(s))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, nil, fmt.Errorf("%q is not a finite number", s)
	}
	return v, nil, nil
}

// parseJSON reads reward.json: an object of named finite numbers with a main one.
func parseJSON(data []byte) (float64, map[string]float64, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return 0, nil, errors.New(`is not a JSON object of named numbers, such as {"reward": 1}`)
	}
	scores := make(map[string]float64, len(raw))
	for k, m := range raw {
		var v float64
		if err := json.Unmarshal(m, &v); err != nil {
			return 0, nil, fmt.Errorf("%q is %s, not a number", k, truncate(string(m)))
		}
		scores[k] = v // JSON has no NaN or infinity, so every number here is finite
	}
	if v, ok := scores["reward"]; ok {
		return v, scores, nil
	}
	if len(scores) == 1 {
		for _, v := range scores {
			return v, scores, nil
		}
	}
	names := make([]string, 0, len(scores))
	for k := range scores {
		names = append(names, k)
	}
	sort.Strings(names)
	return 0, nil, fmt.Errorf(`has no "reward" among %v to judge by`, names)
}

// truncate keeps a quoted bad value short in a one-line message.
func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
