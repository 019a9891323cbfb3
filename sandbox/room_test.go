package sandbox

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Table tests of the pure argv builder and the spec validation.

func baseRoom() Room {
	return Room{Workspace: "/srv/project", Tare: "/usr/local/bin/tare", Argv: []string{"claude", "-p", "hi"}}
}

func TestArgsExact(t *testing.T) {
	r := baseRoom()
	r.Agent = "/opt/agents/node_modules"
	r.RunStore = "/var/lib/tare/run1"
	r.Files = []File{{Path: HomeDir + "/.claude/.credentials.json", Data: []byte("{}"), Mode: 0o600}}
	r.Env = map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080"}
	r.Path = []string{AgentDir + "/node_modules/.bin"}
	r.Relays = []Relay{{Port: 8080, Upstream: "127.0.0.1:41234"}}
	fds := SequentialFDs(1)
	fds.Sock = "/tmp/tare-room-1"
	fds.MaskProc = procMasked
	// Two of the /etc files copied (the others, as when a copy fails, are bound).
	fds.Etc = []EtcFile{{Path: "/etc/ld.so.cache", FD: 10, Mode: 0o644}, {Path: "/etc/localtime", FD: 11, Mode: 0o644}}
	got, err := r.Args(fds)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(`--die-with-parent --new-session --unshare-user --disable-userns --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net
 --hostname room --uid 1000 --gid 1000 --cap-drop ALL --clearenv
 --setenv ANTHROPIC_BASE_URL http://127.0.0.1:8080 --setenv HOME /home/agent --setenv LANG C.UTF-8
 --setenv PATH /opt/agent/node_modules/.bin:/usr/local/bin:/usr/bin:/bin --setenv TERM dumb --setenv TMPDIR /tmp --setenv USER agent
 --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/sbin /sbin --symlink usr/lib /lib --symlink usr/lib64 /lib64
 --perms 0700 --dir /etc --perms 0644 --file 10 /etc/ld.so.cache --ro-bind-try /etc/ssl/certs /etc/ssl/certs --ro-bind-try /etc/ssl/openssl.cnf /etc/ssl/openssl.cnf
 --ro-bind-try /etc/ca-certificates /etc/ca-certificates --ro-bind-try /etc/alternatives /etc/alternatives
 --perms 0644 --file 11 /etc/localtime --ro-bind-try /etc/nsswitch.conf /etc/nsswitch.conf
 --perms 0600 --file 3 /etc/passwd --perms 0600 --file 4 /etc/group --perms 0600 --file 5 /etc/hosts
 --proc /proc --dev /dev --ro-bind /dev/null /proc/keys --ro-bind /dev/null /proc/key-users --ro-bind /dev/null /proc/1/mem --ro-bind /dev/null /proc/1/task/1/mem
 --tmpfs /dev/shm --remount-ro /dev --tmpfs /tmp
 --perms 0700 --tmpfs /home/agent --perms 0700 --dir /home/agent/.claude --perms 0600 --file 6 /home/agent/.claude/.credentials.json
 --ro-bind /opt/agents/node_modules /opt/agent/node_modules --ro-bind /usr/local/bin/tare /opt/tare/tare --bind /srv/project /work
 --bind /var/lib/tare/run1 /tare-run --ro-bind /tmp/tare-room-1 /run/tare
 --seccomp 7 --info-fd 8 --chdir /work --remount-ro / --
 /opt/tare/tare relay --lifeline 9 --owner ` + Owner() + ` --listen 127.0.0.1:8080=/run/tare/8080.sock -- claude -p hi`)
	if !slices.Equal(got, want) {
		t.Errorf("argv differs\n got: %s\nwant: %s", strings.Join(got, " "), strings.Join(want, " "))
	}
}

// flagAt returns the index of the first flag equal to name before "--", or -1.
func flagAt(a []string, name string) int {
	for i, s := range a {
		if s == "--" {
			return -1
		}
		if s == name {
			return i
		}
	}
	return -1
}

func seq(a []string, s ...string) bool {
	for i := 0; i+len(s) <= len(a); i++ {
		if slices.Equal(a[i:i+len(s)], s) {
			return true
		}
	}
	return false
}

func TestArgsInvariants(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Room)
		fds   func(*FDs)
		check func(t *testing.T, a []string)
	}{
		{"never the host root", nil, nil, func(t *testing.T, a []string) {
			for i := range a {
				if (a[i] == "--ro-bind" || a[i] == "--bind" || a[i] == "--ro-bind-try" || a[i] == "--bind-try") && i+1 < len(a) && a[i+1] == "/" {
					t.Errorf("argv binds the host root: %v", a)
				}
			}
		}},
		{"remount-ro / is the last option", nil, nil, func(t *testing.T, a []string) {
			sep := slices.Index(a, "--")
			if sep < 2 || a[sep-2] != "--remount-ro" || a[sep-1] != "/" {
				t.Errorf("--remount-ro / is not right before --: %v", a)
			}
		}},
		{"clearenv before every setenv", nil, nil, func(t *testing.T, a []string) {
			if c, s := flagAt(a, "--clearenv"), flagAt(a, "--setenv"); c < 0 || s < c {
				t.Errorf("--clearenv at %d, first --setenv at %d", c, s)
			}
		}},
		{"relay network unshared", nil, nil, func(t *testing.T, a []string) {
			if flagAt(a, "--unshare-net") < 0 || flagAt(a, "--share-net") >= 0 {
				t.Errorf("room network not unshared: %v", a)
			}
		}},
		{"host network on opt-in only", func(r *Room) { r.Network = NetHost }, nil, func(t *testing.T, a []string) {
			if flagAt(a, "--unshare-net") >= 0 {
				t.Errorf("NetHost still unshares the network")
			}
			if !seq(a, "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf") {
				t.Errorf("NetHost without resolv.conf")
			}
		}},
		{"no sys, no whole etc", nil, nil, func(t *testing.T, a []string) {
			for i, s := range a {
				if s == "/sys" || (s == "/etc" && i > 0 && strings.Contains(a[i-1], "bind")) {
					t.Errorf("argv mounts %s: %v", s, a)
				}
			}
		}},
		{"read-only workspace", func(r *Room) { r.WorkspaceReadOnly = true }, nil, func(t *testing.T, a []string) {
			if !seq(a, "--ro-bind", "/srv/project", WorkDir) || seq(a, "--bind", "/srv/project", WorkDir) {
				t.Errorf("workspace not read-only: %v", a)
			}
		}},
		{"no relays: argv as given", nil, nil, func(t *testing.T, a []string) {
			if !slices.Equal(a[len(a)-4:], []string{"--", "claude", "-p", "hi"}) || seq(a, "--ro-bind", "", SockDir) {
				t.Errorf("tail %v", a[len(a)-4:])
			}
			if slices.Contains(a, SockDir) {
				t.Errorf("socket folder bound without relays")
			}
		}},
		{"files: parents once, perms before each", func(r *Room) {
			r.Files = []File{{Path: HomeDir + "/.a/b/c.json", Data: []byte("x")}, {Path: HomeDir + "/.a/b/d.json", Mode: 0o644}, {Path: HomeDir + "/e"}}
		}, nil, func(t *testing.T, a []string) {
			want := strings.Fields("--perms 0700 --tmpfs /home/agent --perms 0700 --dir /home/agent/.a --perms 0700 --dir /home/agent/.a/b " +
				"--perms 0600 --file 6 /home/agent/.a/b/c.json --perms 0644 --file 7 /home/agent/.a/b/d.json --perms 0600 --file 8 /home/agent/e")
			if !seq(a, want...) {
				t.Errorf("HOME setup differs: %v", a)
			}
		}},
		{"binds after the fixed mounts", func(r *Room) {
			r.Binds = []Bind{{Source: "/srv/cache", Dest: HomeDir + "/.cache/x", Write: true}, {Source: "/srv/ro", Dest: "/opt/data", Try: true}}
		}, nil, func(t *testing.T, a []string) {
			if !seq(a, "--bind", "/srv/cache", HomeDir+"/.cache/x", "--ro-bind-try", "/srv/ro", "/opt/data", "--seccomp", "6", "--info-fd", "7", "--chdir") {
				t.Errorf("binds: %v", a)
			}
		}},
		{"bwrap 0.4.0 drops what it lacks", nil, func(f *FDs) { f.Version = Version{0, 4, 0} }, func(t *testing.T, a []string) {
			if slices.Contains(a, "--perms") || slices.Contains(a, "--disable-userns") {
				t.Errorf("0.4.0 argv has --perms or --disable-userns: %v", a)
			}
		}},
		{"bwrap 0.6.0 keeps perms, lacks disable-userns", nil, func(f *FDs) { f.Version = Version{0, 6, 0} }, func(t *testing.T, a []string) {
			if !seq(a, "--perms", "0700", "--tmpfs", HomeDir) || slices.Contains(a, "--disable-userns") {
				t.Errorf("0.6.0 argv: %v", a)
			}
		}},
		{"TTY sets a real TERM", func(r *Room) { r.TTY = os.Stdin }, nil, func(t *testing.T, a []string) {
			if !seq(a, "--setenv", "TERM", "xterm-256color") {
				t.Errorf("TERM: %v", a)
			}
		}},
		{"env cannot smuggle flags", func(r *Room) { r.Env = map[string]string{"X": "--ro-bind / /"} }, nil, func(t *testing.T, a []string) {
			if !seq(a, "--setenv", "X", "--ro-bind / /") {
				t.Errorf("env value not kept as one argument: %v", a)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := baseRoom()
			if c.edit != nil {
				c.edit(&r)
			}
			fds := SequentialFDs(len(r.Files))
			if c.fds != nil {
				c.fds(&fds)
			}
			a, err := r.Args(fds)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, a)
		})
	}
}

func TestArgsValidation(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Room)
		want []string // substrings of the error: the field and the fix
	}{
		{"missing workspace", func(r *Room) { r.Workspace = "" }, []string{"Workspace is empty", "project folder"}},
		{"relative workspace", func(r *Room) { r.Workspace = "project" }, []string{"Workspace", "relative", "absolute"}},
		{"relative agent", func(r *Room) { r.Agent = "node" }, []string{"Agent", "absolute"}},
		{"empty argv", func(r *Room) { r.Argv = nil }, []string{"Argv is empty", "command"}},
		{"file outside HOME", func(r *Room) { r.Files = []File{{Path: "/etc/claude-code/managed-settings.json"}} }, []string{"Files[0].Path", "outside HOME", "Binds"}},
		{"file relative", func(r *Room) { r.Files = []File{{Path: ".claude.json"}} }, []string{"Files[0].Path", "absolute"}},
		{"file with ..", func(r *Room) { r.Files = []File{{Path: HomeDir + "/../etc/x"}} }, []string{"Files[0].Path", "clean absolute"}},
		{"file twice", func(r *Room) { r.Files = []File{{Path: HomeDir + "/a"}, {Path: HomeDir + "/a"}} }, []string{"Files[1].Path", "repeats Files[0]"}},
		{"file is a folder of another", func(r *Room) { r.Files = []File{{Path: HomeDir + "/a"}, {Path: HomeDir + "/a/b"}} }, []string{"Files[0].Path", "folder of Files[1]"}},
		{"file mode with type bits", func(r *Room) { r.Files = []File{{Path: HomeDir + "/a", Mode: 0o40755 | 1<<31}} }, []string{"Files[0].Mode", "permission bits"}},
		{"duplicate ports", func(r *Room) {
			r.Relays = []Relay{{Port: 8080, Upstream: "127.0.0.1:1"}, {Port: 8080, Upstream: "127.0.0.1:2"}}
		}, []string{"Relays[1].Port 8080", "repeats Relays[0]"}},
		{"port out of range", func(r *Room) { r.Relays = []Relay{{Port: 70000, Upstream: "127.0.0.1:1"}} }, []string{"Relays[0].Port", "1024-65535"}},
		{"privileged port", func(r *Room) { r.Relays = []Relay{{Port: 443, Upstream: "127.0.0.1:1"}} }, []string{"Relays[0].Port 443", "below 1024"}},
		{"relay both", func(r *Room) { r.Relays = []Relay{{Port: 1025, Upstream: "127.0.0.1:1", Allow: []string{}}} }, []string{"Relays[0]", "both"}},
		{"relay neither", func(r *Room) { r.Relays = []Relay{{Port: 1025}} }, []string{"Relays[0]", "neither", "Upstream"}},
		{"bad upstream", func(r *Room) { r.Relays = []Relay{{Port: 1025, Upstream: "localhost"}} }, []string{"Relays[0].Upstream", "host:port"}},
		{"bad allow", func(r *Room) { r.Relays = []Relay{{Port: 1025, Allow: []string{"api.anthropic.com"}}} }, []string{"Relays[0].Allow[0]", "host:port"}},
		{"relays with host network", func(r *Room) {
			r.Network = NetHost
			r.Relays = []Relay{{Port: 1025, Upstream: "127.0.0.1:1"}}
		}, []string{"Relays need", "NetRelay"}},
		{"relays without tare", func(r *Room) { r.Tare = ""; r.Relays = []Relay{{Port: 1025, Upstream: "127.0.0.1:1"}} }, []string{"Tare is empty", "Room.Tare"}},
		{"bind into workspace", func(r *Room) { r.Binds = []Bind{{Source: "/srv/x", Dest: WorkDir + "/.git"}} }, []string{"Binds[0].Dest", "/work", "symlink"}},
		{"bind over root", func(r *Room) { r.Binds = []Bind{{Source: "/", Dest: "/"}} }, []string{"Binds[0].Dest", "replace"}},
		{"bind under etc", func(r *Room) { r.Binds = []Bind{{Source: "/etc", Dest: "/etc/gitconfig"}} }, []string{"Binds[0].Dest", "/etc"}},
		{"bind relative source", func(r *Room) { r.Binds = []Bind{{Source: "x", Dest: "/opt/x"}} }, []string{"Binds[0].Source", "absolute"}},
		{"tmpfs with a source", func(r *Room) { r.Binds = []Bind{{Source: "/srv/x", Dest: "/opt/x", Tmpfs: true}} }, []string{"Binds[0]", "Tmpfs", "Source"}},
		{"tmpfs over usr", func(r *Room) { r.Binds = []Bind{{Dest: "/usr/x", Tmpfs: true}} }, []string{"Binds[0].Dest", "/usr"}},
		{"tmpfs above tare", func(r *Room) { r.Binds = []Bind{{Dest: "/opt/tare", Tmpfs: true}} }, []string{"Binds[0].Dest", "hide", TareBin}},
		{"bind above the shm folder", func(r *Room) { r.Binds = []Bind{{Source: "/srv/x", Dest: "/dev"}} }, []string{"Binds[0].Dest", "/dev"}},
		{"bind below a root link", func(r *Room) { r.Binds = []Bind{{Source: "/srv/x", Dest: "/lib/x"}} }, []string{"Binds[0].Dest", "/lib", "/usr"}},
		{"bind hidden by a later tmpfs", func(r *Room) {
			r.Binds = []Bind{{Source: "/srv/x", Dest: "/opt/mem/x"}, {Dest: "/opt/mem", Tmpfs: true}}
		}, []string{"Binds[0].Dest", "hidden", "Binds[1]", "Tmpfs first"}},
		{"file beside a tmpfs", func(r *Room) {
			r.Binds = []Bind{{Dest: "/opt/mem", Tmpfs: true}}
			r.Files = []File{{Path: "/opt/memo"}}
		}, []string{"Files[0].Path", "outside HOME", "Tmpfs"}},
		{"env HOME", func(r *Room) { r.Env = map[string]string{"HOME": "/root"} }, []string{`Env["HOME"]`, "remove"}},
		{"env PATH", func(r *Room) { r.Env = map[string]string{"PATH": "/x"} }, []string{`Env["PATH"]`, "Room.Path"}},
		{"env bad key", func(r *Room) { r.Env = map[string]string{"A=B": "x"} }, []string{"Env key", "'='"}},
		{"path entry", func(r *Room) { r.Path = []string{"bin"} }, []string{"Path[0]", "absolute"}},
		{"unknown network", func(r *Room) { r.Network = 7 }, []string{"Network 7", "NetRelay"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := baseRoom()
			c.edit(&r)
			_, err := r.Args(SequentialFDs(len(r.Files)))
			if err == nil {
				t.Fatalf("Args accepted the spec")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestValidateHost(t *testing.T) {
	ws := t.TempDir()
	r := Room{Workspace: ws + "/missing", Argv: []string{"true"}}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "Workspace") || !strings.Contains(err.Error(), "create it") {
		t.Errorf("missing workspace: %v", err)
	}
	r = Room{Workspace: ws, Argv: []string{"true"}, Agent: ws + "/node"}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "Agent") {
		t.Errorf("missing agent runtime: %v", err)
	}
	r = Room{Workspace: ws, Argv: []string{"true"}, Binds: []Bind{{Source: ws + "/nope", Dest: "/opt/x"}}}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "Binds[0].Source") || !strings.Contains(err.Error(), "Try") {
		t.Errorf("missing bind source: %v", err)
	}
	r.Binds[0].Try = true
	if err := r.Validate(); err != nil {
		t.Errorf("Try bind of a missing source: %v", err)
	}
}

func TestDeclared(t *testing.T) {
	r := baseRoom()
	r.Network = NetHost
	if d := strings.Join(r.Declared(), "\n"); !strings.Contains(d, "network: HOST") {
		t.Errorf("NetHost not declared:\n%s", d)
	}
	r = baseRoom()
	r.Relays = []Relay{{Port: 8080, Upstream: "127.0.0.1:9"}, {Port: 3128, Allow: []string{"api.anthropic.com:443"}}}
	r.Files = []File{{Path: HomeDir + "/.claude/.credentials.json", Data: []byte("{}")}}
	d := strings.Join(r.Declared(), "\n")
	for _, w := range []string{"127.0.0.1:8080 relays to host 127.0.0.1:9", "CONNECT proxy allowing only api.anthropic.com:443",
		"home file: /home/agent/.claude/.credentials.json (0600, 2 bytes)", "workspace: /srv/project at /work (read-write)"} {
		if !strings.Contains(d, w) {
			t.Errorf("Declared lacks %q:\n%s", w, d)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]Version{
		"bubblewrap 0.8.0\n": {0, 8, 0}, "bubblewrap 0.11.0": {0, 11, 0}, "bubblewrap 0.4": {0, 4, 0}, "bubblewrap 0.10.0-rc1": {0, 10, 0},
	} {
		got, err := ParseVersion(in)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "bwrap", "flatpak 1.0", "bubblewrap x.y"} {
		if _, err := ParseVersion(in); err == nil {
			t.Errorf("ParseVersion(%q) accepted", in)
		}
	}
}

// TestArgsGuard: guarded paths are bound read-only after the workspace, each folder on the
// way bound over itself first (once), shallow before deep; a path leaving the workspace is
// refused, and so is a symlink on the way (a bind would follow it on the host).
func TestArgsGuard(t *testing.T) {
	r := baseRoom()
	r.Guard = []string{"sub/.git/hooks", ".git/config", ".git/hooks", "sub/.git/config"}
	got, err := r.Args(SequentialFDs(0))
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(got, " ")
	want := "--bind /srv/project /work --bind /srv/project/.git /work/.git --ro-bind /srv/project/.git/config /work/.git/config" +
		" --ro-bind /srv/project/.git/hooks /work/.git/hooks --bind /srv/project/sub /work/sub --bind /srv/project/sub/.git /work/sub/.git" +
		" --ro-bind /srv/project/sub/.git/hooks /work/sub/.git/hooks --ro-bind /srv/project/sub/.git/config /work/sub/.git/config --seccomp"
	if !strings.Contains(joined, want) {
		t.Errorf("argv lacks the guard binds in order\n got: %s\nwant: %s", joined, want)
	}
	for _, bad := range []string{"../x", "/abs", "a/../b", ".", ""} {
		r.Guard = []string{bad}
		if _, err := r.Args(SequentialFDs(0)); err == nil || !strings.Contains(err.Error(), "Guard[0]") {
			t.Errorf("Guard %q: %v", bad, err)
		}
	}
	ws := t.TempDir()
	os.MkdirAll(ws+"/real", 0o755)
	os.Symlink("real", ws+"/.git")
	r = Room{Workspace: ws, Argv: []string{"true"}, Guard: []string{".git"}}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("a symlinked guard: %v", err)
	}
}
