package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseErrorsNameLineKeyAndFix(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"wrong type", "[agents.claude]\nbin = 3\n", "config.toml:2: key agents.claude.bin: the value is a number but must be a string in quotes"},
		{"list wanted", "[network]\nallow = \"api.anthropic.com:443\"\n", "config.toml:2: key network.allow: the value is a string in quotes but must be a list"},
		{"table wanted", "[agents]\nclaude = 3\n", "config.toml:2: key agents.claude: the value is a number but must be a table"},
		{"unknown key", "\nstate_dri = \"/x\"\n", `config.toml:2: unknown key "state_dri"`},
		{"unknown nested key", "[room]\nread_onyl = []\n", `config.toml:2: unknown key "room.read_onyl"`},
		{"unknown agent", "[agents.clade]\nbin = \"/x\"\n", "config.toml:1: key agents.clade: unknown agent"},
		{"relative bin", "[agents.pi]\n\nbin = \"pi\"\n", "config.toml:3: key agents.pi.bin: \"pi\" is not an absolute path"},
		{"allow not host:port", "[network]\nallow = [\"https://x\"]\n", "config.toml:2: key network.allow: \"https://x\" is not host:port"},
		{"bind of /etc", "[room]\nread_only = [\"/etc/\"]\n", "would bring all of /etc into every room"},
		{"bind of /", "[room]\nread_only = [\"/\"]\n", "would bring the whole host into every room"},
		{"syntax", "[agents.claude\n", "to end table name"},
		{"check bind relative", "[check]\nread_only = [\"go\"]\n", "config.toml:2: key check.read_only: \"go\" is not an absolute path"},
		{"check cache room path relative", "[check]\n\ncaches = [\"/var/cache/go:cache\"]\n", "config.toml:3: key check.caches: \"/var/cache/go:cache\" is not an absolute path"},
		{"check bind of the home", "[check]\ncaches = [\"~\"]\n", "would bring your home folder into the check's room (read-write)"},
		{"check bind of /", "[check]\nread_only = [\"/:/host\"]\n", "would bring the whole host into the check's room"},
		{"check path relative", "[check]\npath = [\"bin\"]\n", "key check.path: \"bin\" is not an absolute folder"},
		{"check env not a name", "[check]\nenv = [\"GOFLAGS=-x\"]\n", "key check.env: \"GOFLAGS=-x\" is not a variable name"},
		{"check env HOME", "[check]\nenv = [\"HOME\"]\n", "key check.env: HOME is set by the room itself"},
		{"stall floor not a duration", "[tails]\nstall_floor = \"a minute\"\n", "config.toml:2: key tails.stall_floor: \"a minute\" is not a positive duration"},
		{"stall floor negative", "[tails]\nstall_floor = \"-5s\"\n", "key tails.stall_floor: \"-5s\" is not a positive duration"},
		{"slurm bin_dir relative", "[cluster]\nbin_dir = \"bin\"\n", "config.toml:2: key cluster.bin_dir: \"bin\" is not an absolute path"},
		{"program path relative", "[programs]\ngit = \"git\"\n", "config.toml:2: key programs.git: \"git\" is not an absolute path"},
		{"program name a path", "[programs]\n\"bin/git\" = \"/usr/bin/git\"\n", "key programs.bin/git: not a program name"},
		{"check network not a bool", "[check]\nnetwork = \"yes\"\n", "config.toml:2: key check.network: the value is a string in quotes but must be true or false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text), "/etc/tare/config.toml")
			if err == nil {
				t.Fatalf("Parse accepted %q", c.text)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "fix:") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line containing %q and a fix", msg, c.want)
			}
		})
	}
}

func TestLoadDefaultsWhenMissing(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/state")
	cfg, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// No network.allow: each agent's room allows its own hosts, not a global list.
	if cfg.StateDir != "/state/tare" || cfg.Network.Allow != nil || cfg.Path != "" {
		t.Fatalf("defaults not applied: %+v", cfg)
	}
}

func TestExampleConfigIsValidAndComplete(t *testing.T) {
	data, err := os.ReadFile("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data, "config.example.toml")
	if err != nil {
		t.Fatalf("the shipped example does not parse: %v", err)
	}
	if cfg.Agents["claude"].Bin == "" || len(cfg.Room.ReadOnly) == 0 || len(cfg.Network.Allow) == 0 ||
		len(cfg.Check.ReadOnly) == 0 || len(cfg.Check.Caches) == 0 || len(cfg.Check.Path) == 0 || len(cfg.Check.Env) == 0 ||
		cfg.Cluster.Shared == "" || len(cfg.Cluster.Flags) == 0 || cfg.Cluster.CallbackAddr == "" || cfg.Tails.StallFloor == "" {
		t.Fatalf("the example should set every key once (uncommented) so it is checked: %+v", cfg)
	}
}

// TestCheckBinds: a [check] bind is "HOST" at the same path or "HOST:ROOM", "~" being the
// operator's home on the host side only.
func TestCheckBinds(t *testing.T) {
	t.Setenv("HOME", "/home/op")
	for entry, want := range map[string][2]string{
		"/usr/local/go":                           {"/usr/local/go", "/usr/local/go"},
		"~/go/pkg/mod:/home/agent/go/pkg/mod":     {"/home/op/go/pkg/mod", "/home/agent/go/pkg/mod"},
		"/var/cache/tool:/home/agent/.cache/tool": {"/var/cache/tool", "/home/agent/.cache/tool"},
	} {
		if host, room := SplitBind(entry); host != want[0] || room != want[1] {
			t.Errorf("SplitBind(%q) = %q, %q; want %q, %q", entry, host, room, want[0], want[1])
		}
	}
}

func TestHomeExpansion(t *testing.T) {
	t.Setenv("HOME", "/home/op")
	cfg, err := Parse([]byte("state_dir = \"~/tare-state\"\n"), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StateDir != "/home/op/tare-state" {
		t.Fatalf("state_dir = %q", cfg.StateDir)
	}
}

// TestClusterKeysAreChecked: a [cluster] value sbatch would refuse (or a shared folder that
// is not absolute) is refused when the config is read, naming the key and the fix.
func TestClusterKeysAreChecked(t *testing.T) {
	for text, key := range map[string]string{
		"[cluster]\nmemory = \"lots\"\n":         "cluster.memory",
		"[cluster]\ntime = \"an hour\"\n":        "cluster.time",
		"[cluster]\nshared = \"scratch\"\n":      "cluster.shared",
		"[cluster]\nflags = [\"--qos short\"]\n": "cluster.flags",
		"[cluster]\ncallback_addr = \"h:1\"\n":   "cluster.callback_addr",
	} {
		_, err := Parse([]byte(text), "c.toml")
		if err == nil || !strings.Contains(err.Error(), "c.toml:2: key "+key) || !strings.Contains(err.Error(), "fix:") {
			t.Errorf("%q: got %v, want the line, key %s and a fix", text, err, key)
		}
	}
}
