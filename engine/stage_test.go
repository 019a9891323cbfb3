package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagePageRefusesAHugeFolder: a page folder holding a file larger than the cap (sparse:
// it costs the test nothing) is refused before it fills the disk.
func TestStagePageRefusesAHugeFolder(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "index.html"), []byte("<h1>x</h1>"), 0o644)
	if err := os.Truncate(filepath.Join(src, "index.html"), maxStage+1); err != nil {
		t.Fatal(err)
	}
	_, _, err := stagePage(src, filepath.Join(t.TempDir(), "page"))
	if err == nil || !strings.Contains(err.Error(), "fix:") {
		t.Fatalf("got %v, want a refusal with the fix", err)
	}
}

// TestCopyRegularFollowsNoLinkOnTheWay: a folder of the page swapped for a link after the
// walk saw it (sub -> a host folder) is refused, not followed: the host file is not copied.
func TestCopyRegularFollowsNoLinkOnTheWay(t *testing.T) {
	host, src := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(host, "secret.html"), []byte("host canary"), 0o644)
	if err := os.Symlink(host, filepath.Join(src, "sub")); err != nil {
		t.Fatal(err)
	}
	root, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	dst := filepath.Join(t.TempDir(), "secret.html")
	if err := copyRegular(root, "sub/secret.html", dst, nil); err == nil {
		t.Fatalf("a file reached through a link was copied")
	}
	if _, err := os.Stat(dst); err == nil {
		t.Errorf("the host file was copied to %s", dst)
	}
}

// TestStagePageLeavesOutModelNames: files named for a model family are left out (short names
// only as a word of their own), generator tags and meta tags or comments naming an agent or
// a model are taken out of the copied markup, and the rest of a file passes as written.
func TestStagePageLeavesOutModelNames(t *testing.T) {
	src := t.TempDir()
	files := map[string]string{
		"index.html": `<html><head><meta name="generator" content="Hugo"><META NAME=author CONTENT="GPT-4o">` +
			`<meta charset="utf-8"><!-- layout: two columns --><!--
 written by Claude Opus --><style>/* qwen palette */ h1{color:red}</style></head><body>A haiku about gemini.</body></html>`,
		"app.js":              "/* llama-3 wrote this */ let x = 1;\n",
		"NOTES-sonnet-4.5.md": "x", "opus-plan.txt": "x", "o3-draft.md": "x", "gpt-5-notes.md": "x", "gemini-2.5.txt": "x",
		"qwen.md": "x", "llama3.txt": "x", "deepseek.md": "x", "pi-notes.md": "x", "o4-mini.txt": "x",
		"strategy.md": "kept", "photo3.png": "kept", "pillow.css": "kept", "sub/logo.svg": `<svg><!-- made with haiku-4.5 --></svg>`,
	}
	for name, data := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755)
		os.WriteFile(filepath.Join(src, name), []byte(data), 0o644)
	}
	dst := filepath.Join(t.TempDir(), "page")
	left, scrubbed, err := stagePage(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"NOTES-sonnet-4.5.md", "opus-plan.txt", "o3-draft.md", "gpt-5-notes.md", "gemini-2.5.txt", "qwen.md", "llama3.txt", "deepseek.md", "pi-notes.md", "o4-mini.txt"} {
		if _, err := os.Stat(filepath.Join(dst, name)); err == nil {
			t.Errorf("%s reached the judge", name)
		}
		if !strings.Contains(strings.Join(left, "\n"), name+" (named for an agent or a model)") {
			t.Errorf("the left-out list does not name %s: %v", name, left)
		}
	}
	for _, name := range []string{"strategy.md", "photo3.png", "pillow.css"} {
		if _, err := os.Stat(filepath.Join(dst, name)); err != nil {
			t.Errorf("%s was left out: %v", name, left)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dst, "index.html"))
	want := `<html><head><meta charset="utf-8"><!-- layout: two columns --><style> h1{color:red}</style></head><body>A haiku about gemini.</body></html>`
	if string(page) != want {
		t.Errorf("staged index.html:\n%s\nwant:\n%s", page, want)
	}
	if js, _ := os.ReadFile(filepath.Join(dst, "app.js")); string(js) != " let x = 1;\n" {
		t.Errorf("staged app.js %q", js)
	}
	if svg, _ := os.ReadFile(filepath.Join(dst, "sub", "logo.svg")); string(svg) != "<svg></svg>" {
		t.Errorf("staged logo.svg %q", svg)
	}
	got := strings.Join(scrubbed, "\n")
	for _, w := range []string{"index.html: a generator meta tag", "index.html: a meta naming gpt", "index.html: a comment naming claude", "index.html: a comment naming qwen",
		"app.js: a comment naming llama", "sub/logo.svg: a comment naming haiku"} {
		if !strings.Contains(got, w) {
			t.Errorf("scrubbed does not say %q:\n%s", w, got)
		}
	}
}

// A script's // line comment naming a model is taken out like a block comment; the // of a
// URL, in a string or not, and a comment naming nothing stay.
func TestScrubLineComments(t *testing.T) {
	in := "const u = \"https://claude.ai/x\"; // fetch the data\nlet x = 1; // drafted by claude-sonnet-4.5\n// opus wrote this file\nhttp://example.org\n"
	out, took := scrub([]byte(in))
	got := string(out)
	for _, kept := range []string{`"https://claude.ai/x"`, "// fetch the data", "let x = 1; ", "http://example.org"} {
		if !strings.Contains(got, kept) {
			t.Errorf("scrub took out %q:\n%s", kept, got)
		}
	}
	for _, gone := range []string{"drafted by claude", "opus wrote"} {
		if strings.Contains(got, gone) {
			t.Errorf("scrub kept %q:\n%s", gone, got)
		}
	}
	if len(took) != 2 {
		t.Errorf("took %q, want the two comments named", took)
	}
}
