package taskset

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadReward(t *testing.T) {
	text := func(s string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, RewardText), []byte(s), 0o644))
		}
	}
	js := func(s string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, RewardJSON), []byte(s), 0o644))
		}
	}
	cases := []struct {
		name    string
		write   func(t *testing.T, dir string)
		passAt  float64
		outcome Outcome
		value   float64
		scores  map[string]float64
		why     string
	}{
		{"pass", text("1\n"), DefaultPassAt, Passed, 1, nil, ""},
		{"fail", text("0"), DefaultPassAt, Failed, 0, nil, ""},
		{"score below pass", text(" 0.75 \n"), DefaultPassAt, Failed, 0.75, nil, ""},
		{"score at --pass-at", text("0.75"), 0.7, Passed, 0.75, nil, ""},
		{"above one", text("2"), DefaultPassAt, Passed, 2, nil, ""},
		{"garbled", text("passed"), DefaultPassAt, NoVerdict, 0, nil, `"passed" is not a number`},
		{"empty", text(""), DefaultPassAt, NoVerdict, 0, nil, "is not a number"},
		{"NaN", text("NaN"), DefaultPassAt, NoVerdict, 0, nil, "is not a finite number"},
		{"infinite", text("+Inf"), DefaultPassAt, NoVerdict, 0, nil, "is not a finite number"},
		{"oversized", text(strings.Repeat(" ", maxRewardBytes) + "1"), DefaultPassAt, NoVerdict, 0, nil, "is larger than"},
		{"missing", func(*testing.T, string) {}, DefaultPassAt, NoVerdict, 0, nil, "the verifier wrote neither reward.txt nor reward.json"},
		{"json", js(`{"reward": 1, "style": 0.5}`), DefaultPassAt, Passed, 1, map[string]float64{"reward": 1, "style": 0.5}, ""},
		{"json failing", js(`{"reward": 0.0}`), DefaultPassAt, Failed, 0, map[string]float64{"reward": 0}, ""},
		{"json one other name", js(`{"accuracy": 1}`), DefaultPassAt, Passed, 1, map[string]float64{"accuracy": 1}, ""},
		{"json no main", js(`{"a": 1, "b": 0}`), DefaultPassAt, NoVerdict, 0, nil, `has no "reward" among [a b]`},
		{"json not a number", js(`{"reward": "1"}`), DefaultPassAt, NoVerdict, 0, nil, `"reward" is "1", not a number`},
		{"json not an object", js(`[1]`), DefaultPassAt, NoVerdict, 0, nil, "is not a JSON object"},
		{"json null", js(`null`), DefaultPassAt, NoVerdict, 0, nil, "is not a JSON object"},
		{"json empty", js(`{}`), DefaultPassAt, NoVerdict, 0, nil, `has no "reward"`},
		{"json overflow", js(`{"reward": 1e999}`), DefaultPassAt, NoVerdict, 0, nil, "not a number"},
		{"text before json", func(t *testing.T, dir string) {
			text("0")(t, dir)
			js(`{"reward": 1}`)(t, dir)
		}, DefaultPassAt, Failed, 0, nil, ""},
		{"symlinked reward", func(t *testing.T, dir string) {
			real := filepath.Join(t.TempDir(), "planted")
			must(t, os.WriteFile(real, []byte("1"), 0o644))
			must(t, os.Symlink(real, filepath.Join(dir, RewardText)))
		}, DefaultPassAt, NoVerdict, 0, nil, "reward.txt: is a link"},
		{"symlinked json", func(t *testing.T, dir string) {
			must(t, os.Symlink("/dev/zero", filepath.Join(dir, RewardJSON)))
		}, DefaultPassAt, NoVerdict, 0, nil, "reward.json: is a link"},
		{"fifo", func(t *testing.T, dir string) {
			// Nothing ever writes to this fifo: a reader that blocked on it would hang the test.
			must(t, unix.Mkfifo(filepath.Join(dir, RewardText), 0o600))
		}, DefaultPassAt, NoVerdict, 0, nil, "reward.txt: is not a regular file"},
		{"folder", func(t *testing.T, dir string) {
			must(t, os.Mkdir(filepath.Join(dir, RewardText), 0o755))
		}, DefaultPassAt, NoVerdict, 0, nil, "reward.txt: is not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.write(t, dir)
			r := ReadReward(dir, c.passAt)
			if r.Outcome != c.outcome || r.Value != c.value || !reflect.DeepEqual(r.Scores, c.scores) {
				t.Errorf("got %v %v %v, want %v %v %v (%s)", r.Outcome, r.Value, r.Scores, c.outcome, c.value, c.scores, r.Why)
			}
			if !strings.Contains(r.Why, c.why) || (c.why == "") != (r.Why == "") {
				t.Errorf("why %q, want %q", r.Why, c.why)
			}
		})
	}
}

// The log folder itself must not be a link either: a verifier that swapped it for one would
// choose which file tare reads.
func TestReadRewardLinkedFolder(t *testing.T) {
	real := t.TempDir()
	must(t, os.WriteFile(filepath.Join(real, RewardText), []byte("1"), 0o644))
	link := filepath.Join(t.TempDir(), "verifier")
	must(t, os.Symlink(real, link))
	if r := ReadReward(link, DefaultPassAt); r.Outcome != NoVerdict || !strings.Contains(r.Why, "cannot be opened") {
		t.Errorf("got %v (%s), want no verdict", r.Outcome, r.Why)
	}
}
