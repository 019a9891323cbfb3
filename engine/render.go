package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"tare/config"
	"tare/engine/browser"
	"tare/engine/room"
	"tare/engine/run"
	"tare/sandbox"
)

// fontsDir is where the render room sees the host's /etc/fonts: a room's /etc holds only
// what sandbox allows, so fontconfig is pointed here (FONTCONFIG_PATH). Without it Chromium
// falls back to other fonts and the screenshot differs from the host's.
const fontsDir = "/opt/fonts"

// renderPage renders page, a path below dir, to a full-page screenshot with headless
// Chromium in a room with no network: the room holds dir read-only, the fonts and the
// browser, and its only interface is loopback. Whatever the page loads from elsewhere fails
// there and is named in Shot.Blocked.
func renderPage(ctx context.Context, cfg *config.Config, dir, page string) (browser.Shot, error) {
	box, err := renderRoom(cfg, dir, page)
	if err != nil {
		return browser.Shot{}, err
	}
	var stdout, stderr bytes.Buffer
	box.Stdout, box.Stderr = &stdout, &stderr
	code, err := room.Run(ctx, box)
	if err != nil {
		return browser.Shot{}, fmt.Errorf("render room: %v", err)
	}
	if code != 0 {
		return browser.Shot{}, fmt.Errorf("rendering %s failed (exit %d): %s", page, code, run.Clip(lastLine(stderr.String()), 300))
	}
	var shot browser.Shot
	if err := json.Unmarshal(stdout.Bytes(), &shot); err != nil || len(shot.PNG) == 0 {
		return browser.Shot{}, fmt.Errorf("rendering %s gave no screenshot: %s", page, run.Clip(strings.TrimSpace(stderr.String()), 300))
	}
	return shot, nil
}

// renderRoom is the room Chromium renders page in: dir read-only at the workspace, the fonts,
// and a network namespace of its own with no relays, so loopback is the room's own and
// nothing else is reachable.
func renderRoom(cfg *config.Config, dir, page string) (sandbox.Room, error) {
	bin, err := browser.Find()
	if err != nil {
		return sandbox.Room{}, err
	}
	u := url.URL{Scheme: "file", Path: filepath.Join(sandbox.WorkDir, filepath.ToSlash(page))}
	return sandbox.Room{
		Workspace:         dir,
		WorkspaceReadOnly: true,
		Network:           sandbox.NetRelay,
		Bwrap:             cfg.Bwrap,
		Binds: []sandbox.Bind{
			{Source: "/etc/fonts", Dest: fontsDir, Try: true},
			{Source: "/var/cache/fontconfig", Dest: "/var/cache/fontconfig", Try: true},
		},
		// TZ: without it every Chromium process scans /usr/share/zoneinfo; UTC also makes the
		// page's dates the same on every machine.
		Env:  map[string]string{"TZ": "UTC", "FONTCONFIG_PATH": fontsDir},
		Argv: []string{sandbox.TareBin, "screenshot", "--exec", bin, u.String()},
	}, nil
}
