package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
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

// TestExchangeStreamsUploadsWithACap: a worker's upload is streamed to disk, not read whole
// into tare's memory (64 MiB sent costs far less than 64 MiB of allocations), refused past
// the cap with nothing left behind, and an end-capsule object whose bytes do not hash to its
// name is refused as it arrives.
func TestExchangeStreamsUploadsWithACap(t *testing.T) {
	root := t.TempDir()
	x := filepath.Join(root, "tails", "a-0.0")
	os.MkdirAll(x, 0o755)
	os.WriteFile(filepath.Join(x, "job.json"), []byte(`{"spec":{}}`), 0o600)
	s, err := serveExchange(root, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	put := func(path string, body io.Reader) int {
		req, _ := http.NewRequest("PUT", s.url+"/put/a-0.0/"+path, body)
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const size = 64 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if got := put("stderr.log", io.LimitReader(zeros{}, size)); got != 204 {
		t.Fatalf("a 64 MiB log: %d", got)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > size/4 {
		t.Errorf("a 64 MiB upload allocated %d MiB: it was read into memory", grew>>20)
	}
	if st, err := os.Stat(filepath.Join(x, "stderr.log")); err != nil || st.Size() != size {
		t.Fatalf("the log as written: %v %v", st, err)
	}
	s.maxUpload = 1 << 20
	if got := put("stdout.jsonl", io.LimitReader(zeros{}, 2<<20)); got != http.StatusRequestEntityTooLarge {
		t.Errorf("an upload over the cap: %d, want 413", got)
	}
	sum := sha256.Sum256([]byte("a blob"))
	name := hex.EncodeToString(sum[:])
	if got := put("end/blobs/"+name[:2]+"/"+name[2:], strings.NewReader("not that blob")); got != http.StatusBadRequest {
		t.Errorf("an object that does not hash to its name: %d, want 400", got)
	}
	if got := put("end/blobs/"+name[:2]+"/"+name[2:], strings.NewReader("a blob")); got != 204 {
		t.Errorf("an object that hashes to its name: %d, want 204", got)
	}
	var left []string
	filepath.WalkDir(x, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(x, p)
			left = append(left, rel)
		}
		return nil
	})
	if want := "job.json stderr.log end/blobs/" + name[:2] + "/" + name[2:]; strings.Join(sortedCopy(left), " ") != strings.Join(sortedCopy(strings.Fields(want)), " ") {
		t.Errorf("the exchange folder holds %v, want only %s: a refused upload left something", left, want)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
