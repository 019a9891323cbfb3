package engine

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tare/capsule"
)

// TestExchangeRefusesWithoutTheToken: the HTTP exchange answers only requests with the run's
// token (none, another run's, or a guess is refused, and an upload without it writes
// nothing), and only paths it serves: no way out of the exchange folders.
func TestExchangeRefusesWithoutTheToken(t *testing.T) {
	root := t.TempDir()
	x := filepath.Join(root, "tails", "a-0.0")
	os.MkdirAll(x, 0o755)
	os.WriteFile(filepath.Join(x, "job.json"), []byte(`{"spec":{}}`), 0o600)
	os.WriteFile(filepath.Join(root, "secret"), []byte("no"), 0o600)
	s, err := serveExchange(root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if st, err := os.Stat(filepath.Join(root, httpFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want mode 0600 (it holds the token)", httpFile, st, err)
	}
	send := func(method, path, token, body string) int {
		req, _ := http.NewRequest(method, s.url+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	other := strings.Repeat("0", 64)
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/job/a-0.0", "", 401},
		{"GET", "/job/a-0.0", other, 401},
		{"GET", "/job/a-0.0", s.token[:63], 401},
		{"PUT", "/put/a-0.0/result.json", "", 401},
		{"GET", "/job/a-0.0", s.token, 200},
		{"GET", "/job/..", s.token, 404},
		{"GET", "/store/" + other + "/../../secret", s.token, 404},
		{"PUT", "/put/a-0.0/../../secret", s.token, 404},
		{"PUT", "/put/a-0.0/job.json", s.token, 404},
		{"PUT", "/put/b-0.0/result.json", s.token, 404},
	} {
		if got := send(c.method, c.path, c.token, "{}"); got != c.want {
			t.Errorf("%s %s (token %q): %d, want %d", c.method, c.path, c.token, got, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(x, "result.json")); err == nil {
		t.Fatal("an upload without the token was written")
	}
	if got := send("PUT", "/put/a-0.0/result.json", s.token, "{}"); got != 204 {
		t.Fatalf("an upload with the token: %d", got)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "secret")); string(data) != "no" {
		t.Fatal("a file outside the exchange folders was changed")
	}
}

// TestExchangeRefusesATamperedEndCapsule: an end capsule sent back over HTTP whose object
// does not hash to its name is refused by tare, not restored.
func TestExchangeRefusesATamperedEndCapsule(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	os.WriteFile(filepath.Join(work, "f.txt"), []byte("the agent's work\n"), 0o644)
	b := &slurmBackend{root: filepath.Join(dir, "root")}
	var err error
	if b.store, err = capsule.Open(filepath.Join(b.root, "store")); err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(b.root, "tails", "a-0.0")
	stage, err := capsule.OpenStage(filepath.Join(x, "end"), b.store.Dir())
	if err != nil {
		t.Fatal(err)
	}
	end, err := stage.Snap(context.Background(), work, "a-0.0-end")
	if err != nil {
		t.Fatal(err)
	}
	blobs, _ := filepath.Glob(filepath.Join(x, "end", "blobs", "*", "*"))
	if len(blobs) != 1 {
		t.Fatalf("blobs %v", blobs)
	}
	good, _ := os.ReadFile(blobs[0])
	os.Chmod(blobs[0], 0o644)
	os.WriteFile(blobs[0], []byte("the agent's wort\n"), 0o644)
	if _, err := b.importEnd(context.Background(), x, end.Root); err == nil || !strings.Contains(err.Error(), "hashes to") {
		t.Fatalf("a tampered blob: %v, want refused for its hash", err)
	}
	os.WriteFile(blobs[0], good, 0o644)
	if c, err := b.importEnd(context.Background(), x, end.Root); err != nil || c.Root != end.Root {
		t.Fatalf("the intact capsule: %+v %v", c, err)
	}
}
