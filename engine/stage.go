package engine

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// agentWords match what names a coding agent, its maker or a model family: a page folder
// from an agent's workspace may hold its instruction files (CLAUDE.md, AGENTS.md), its
// settings folder or notes named for its model (NOTES-sonnet-4.5.md, o3-draft.md), and a
// judge who saw them would know who built the page. Short names (o3, pi, agy) count only as
// a word of their own, so strategy.md or photo3.png stay in.
var agentWords = regexp.MustCompile(`(?i)claude|codex|gemini|antigravity|anthropic|openai|agents\.md|sonnet|opus|haiku|gpt|qwen|llama|deepseek|mistral|grok|copilot|` +
	`(?:^|[^a-z0-9])(?:agy|pi|o[134](?:-mini|-pro)?)(?:[^a-z0-9]|$)`)

// Markup the judge reads: in these files a generator meta tag, a meta tag or a comment naming
// an agent or a model is taken out of the copy (scrub); everything else passes as written.
var (
	scrubbedExt = map[string]bool{".html": true, ".htm": true, ".xhtml": true, ".svg": true, ".xml": true, ".css": true, ".js": true, ".mjs": true}
	metaTag     = regexp.MustCompile(`(?is)<meta\b[^>]*>`)
	generator   = regexp.MustCompile(`(?i)name\s*=\s*["']?generator\b`)
	comment     = regexp.MustCompile(`(?s)<!--.*?-->|/\*.*?\*/`)
	// lineComment is a script's // comment (not the // of a URL's scheme).
	lineComment = regexp.MustCompile(`(?m)(?:^|[^:"'\\/])//[^\n]*`)
)

// maxScrub bounds a markup file scrubbed in memory; a larger one is left out, said so.
const maxScrub = 64 << 20

// scrub takes out of markup what names who built it: every generator meta tag, and meta tags
// and comments that name an agent or a model. It returns the text and what it took out.
func scrub(data []byte) ([]byte, []string) {
	var took []string
	named := func(what string) func([]byte) []byte {
		return func(m []byte) []byte {
			w := agentWords.Find(m)
			switch {
			case what == "meta" && generator.Match(m):
				took = append(took, "a generator meta tag")
			case w != nil:
				took = append(took, fmt.Sprintf("a %s naming %s", what, strings.Trim(strings.ToLower(string(w)), " -_./")))
			default:
				return m
			}
			return nil
		}
	}
	data = metaTag.ReplaceAllFunc(data, named("meta"))
	data = comment.ReplaceAllFunc(data, named("comment"))
	// A // comment's match starts with the character before it, which stays.
	line := named("comment")
	data = lineComment.ReplaceAllFunc(data, func(m []byte) []byte {
		lead := m[:bytes.Index(m, []byte("//"))]
		if line(m[len(lead):]) == nil {
			return append([]byte(nil), lead...)
		}
		return m
	})
	return data, took
}

// maxStage bounds what a page folder may hold for the judge: the copy is made on the host, and
// a folder an agent wrote may hold a file as large as the disk (a sparse one costs it nothing).
const maxStage = 1 << 30

// stagePage copies the page folder src into dst, a fresh folder, for the judge: regular
// files and folders only, never a link (it would be followed when copied, and could point
// anywhere on the host), and nothing hidden or named for an agent. It returns what it left
// out, relative to src, and what it scrubbed out of the markup it copied (scrub).
func stagePage(src, dst string) (left, scrubbed []string, err error) {
	var total int64
	// Every file is opened beneath this handle on src, so a folder on the way that became a
	// link is refused, not followed out of the page folder.
	root, err := os.OpenFile(src, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the page folder %s: %v", src, err)
	}
	defer root.Close()
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("reading the page folder %s: %v", src, err)
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return os.MkdirAll(dst, 0o755)
		}
		if why := leaveOut(d); why != "" {
			left = append(left, rel+" ("+why+")")
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.Mkdir(filepath.Join(dst, rel), 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("reading the page folder %s: %v", src, err)
		}
		if total += info.Size(); total > maxStage {
			return fmt.Errorf("the page folder %s holds more than %d MB (at %s); fix: judge a folder with only the page's files", src, maxStage>>20, rel)
		}
		if !scrubbedExt[strings.ToLower(filepath.Ext(rel))] {
			return copyRegular(root, rel, filepath.Join(dst, rel), nil)
		}
		if info.Size() > maxScrub {
			left = append(left, rel+" (markup too large to scrub of agent names)")
			return nil
		}
		return copyRegular(root, rel, filepath.Join(dst, rel), func(data []byte) []byte {
			data, took := scrub(data)
			for _, t := range took {
				scrubbed = append(scrubbed, rel+": "+t)
			}
			return data
		})
	})
	return left, scrubbed, err
}

// leaveOut says why an entry of a page folder is not given to the judge, or "".
func leaveOut(d fs.DirEntry) string {
	name := strings.ToLower(d.Name())
	switch {
	case strings.HasPrefix(name, "."):
		return "hidden"
	case d.Type()&fs.ModeSymlink != 0:
		return "a link"
	case !d.IsDir() && !d.Type().IsRegular():
		return "not a regular file"
	}
	if agentWords.MatchString(name) {
		return "named for an agent or a model"
	}
	return ""
}

// copyRegular copies one regular file, rel below root, refusing to follow a link anywhere
// on its path (openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS: not the file, nor a
// folder on the way, swapped for a link since the walk saw it) or to block on a fifo. With
// edit, the file is read whole (at most maxScrub) and edit's bytes are written instead.
func copyRegular(root *os.File, rel, dst string, edit func([]byte) []byte) error {
	src := filepath.Join(root.Name(), rel)
	fd, err := unix.Openat2(int(root.Fd()), rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("copying %s for the judge: %v (a link is never followed)", src, err)
	}
	in := os.NewFile(uintptr(fd), src)
	defer in.Close()
	if info, err := in.Stat(); err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("copying %s for the judge: not a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("copying %s for the judge: %v", src, err)
	}
	var r io.Reader = in
	if edit != nil {
		data, err := io.ReadAll(io.LimitReader(in, maxScrub+1))
		if err != nil || len(data) > maxScrub {
			out.Close()
			return fmt.Errorf("copying %s for the judge: %v (at most %d MB of markup is read)", src, err, maxScrub>>20)
		}
		r = bytes.NewReader(edit(data))
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return fmt.Errorf("copying %s for the judge: %v", src, err)
	}
	return out.Close()
}
