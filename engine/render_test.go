package engine

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tare/engine/browser"
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
// viewport, and the script's URL named as blocked.
func TestRenderPageInARoomWithoutNetwork(t *testing.T) {
	if _, err := browser.Find(); err != nil {
		t.Fatal(err)
	}
	dir := writePage(t, remotePage)
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
	if len(shot.Blocked) != 1 || shot.Blocked[0] != "https://cdn.example.com/lib.js" {
		t.Errorf("blocked %v, want the remote script named", shot.Blocked)
	}
}
