// Package browser renders a page to a screenshot with headless Chromium, driven over
// Chrome's DevTools pipe (chromedp). It runs inside a room with no network: the engine starts
// `tare screenshot` there (Main), and Chromium is its child, so the page and everything it
// loads stay in the room. A request for anything that is not the page's own files fails
// there, and Shoot names each one.
package browser

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The fixed viewport: every page is judged at the same size, so scores compare.
const (
	Width  = 1280
	Height = 800
)

// Binaries are Debian's headless Chromium builds, in the order they are tried:
// chromium-headless-shell starts fastest; the full chromium works too.
var Binaries = []string{"/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium"}

// Find returns the first installed Chromium of Binaries, or the fix.
func Find() (string, error) {
	for _, b := range Binaries {
		if info, err := os.Stat(b); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return b, nil
		}
	}
	return "", errors.New("headless Chromium is not installed (" + strings.Join(Binaries, ", ") +
		"); fix: run scripts/setup, or apt-get install chromium-headless-shell")
}

// Shot is a rendered page.
type Shot struct {
	// PNG is the full-page screenshot at the fixed viewport's width.
	PNG []byte `json:"png"`
	// Blocked are the URLs the page asked for that are not its own files (no network here).
	Blocked []string `json:"blocked,omitempty"`
}

// Shoot renders pageURL with the Chromium at exec and returns a full-page PNG. Chromium's
// own sandbox is off: the room it runs in is the sandbox, and the room's seccomp filter
// refuses the namespaces Chromium's sandbox would make.
func Shoot(ctx context.Context, exec, pageURL string) (Shot, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exec),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(Width, Height),
		chromedp.Flag("disable-component-update", true),
		// No name lookups at all: a remote URL fails at once instead of waiting on a resolver.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
	)
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	var mu sync.Mutex
	blocked := map[string]bool{}
	if err := chromedp.Listen(bctx, func(ev any) {
		if ev, ok := ev.(*network.EventRequestWillBeSent); ok && ev.Request != nil && remote(ev.Request.URL) {
			mu.Lock()
			blocked[ev.Request.URL] = true
			mu.Unlock()
		}
	}); err != nil {
		return Shot{}, fmt.Errorf("starting %s: %v", exec, err)
	}
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(Width, Height), chromedp.Navigate(pageURL)); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Shot{}, fmt.Errorf("%s did not finish loading in %s (a script that never ends?)", pageURL, shotTimeout)
		}
		return Shot{}, fmt.Errorf("loading %s: %v", pageURL, err)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		return Shot{}, fmt.Errorf("screenshot of %s: %v", pageURL, err)
	}
	mu.Lock()
	defer mu.Unlock()
	shot := Shot{PNG: png}
	for u := range blocked {
		shot.Blocked = append(shot.Blocked, u)
	}
	sort.Strings(shot.Blocked)
	return shot, nil
}

// remote says whether a request leaves the page's own files: anything but file:, data:,
// blob: and about: needs a network the room does not have.
func remote(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	switch u.Scheme {
	case "file", "data", "blob", "about", "chrome", "devtools":
		return false
	}
	return true
}

// shotTimeout bounds one render inside the room.
const shotTimeout = 90 * time.Second
