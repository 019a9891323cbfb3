package engine

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tare/engine/browser"
	"tare/engine/room"
)

// remotePage is a page that loads a script from the network and draws taller than the
// viewport: offline it must render without the script, whole, and say what it could not load.
const remotePage = `<!doctype html><html><head><link rel="stylesheet" href="style.css">
<script src="https://cdn.example.com/lib.js"></script></head>
<body><h1 id="t">static</h1>
<script>document.getElementById('t').textContent = typeof window.remoteLib === 'undefined' ? 'local only' : 'remote ran';
document.title = document.getElementById('t').textContent;</script>
<div style="height:2000px;background:linear-gradient(red,blue)"></div></body></html>
`

// writePage writes a page folder with index.html and a stylesheet.
func writePage(t *testing.T, html string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "site")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"index.html": html, "style.css": "h1{color:green}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRenderPageInARoomWithoutNetwork: real headless Chromium in a real room renders a page
// whose remote script cannot load: a full-page PNG at the fixed width, taller than the
// viewport, and the script's URL named as blocked. An image from a server on the host's
// loopback is blocked too: the room's loopback is its own.
func TestRenderPageInARoomWithoutNetwork(t *testing.T) {
	needRooms(t)
	if _, err := browser.Find(); err != nil {
		t.Fatal(err)
	}
	// A service on the host's loopback: the page must not reach it either.
	var hits atomic.Int32
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer host.Close()
	dir := writePage(t, strings.Replace(remotePage, "</body>", `<img src="`+host.URL+`/pixel.png"></body>`, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shot, err := renderPage(ctx, testConfig(t, nil), dir, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot.PNG))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != browser.Width || b.Dy() <= browser.Height {
		t.Errorf("screenshot is %dx%d, want %d wide and taller than %d (the full page)", b.Dx(), b.Dy(), browser.Width, browser.Height)
	}
	if want := []string{host.URL + "/pixel.png", "https://cdn.example.com/lib.js"}; strings.Join(shot.Blocked, " ") != strings.Join(want, " ") {
		t.Errorf("blocked %v, want %v named", shot.Blocked, want)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the page reached a service on the host's loopback %d times", n)
	}
}

// TestRenderRoomHasOnlyLoopback: the render room's only interface is its own loopback, so a
// page cannot reach the host's services or any network, whatever Chromium's flags say.
func TestRenderRoomHasOnlyLoopback(t *testing.T) {
	needRooms(t)
	box, err := renderRoom(testConfig(t, nil), writePage(t, remotePage), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	box.Argv, box.Stdout = []string{"/bin/cat", "/proc/net/dev"}, &out
	if code, err := room.Run(context.Background(), box); err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	var ifaces []string
	for _, l := range strings.Split(out.String(), "\n") {
		if name, _, ok := strings.Cut(l, ":"); ok {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	if strings.Join(ifaces, " ") != "lo" {
		t.Fatalf("the render room has interfaces %v, want only lo", ifaces)
	}
}
