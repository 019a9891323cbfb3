package capsule

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

const (
	h1 = "1111111111111111111111111111111111111111111111111111111111111111"
	h2 = "2222222222222222222222222222222222222222222222222222222222222222"
)

func TestTreeEncoding(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"empty folder", nil, "tare-tree 1\n"},
		{"file, dir, symlink", []Entry{
			{Name: "a.txt", Kind: KindFile, Mode: 0o644, Size: 5, Hash: h1},
			{Name: "bin", Kind: KindDir, Mode: 0o755, Size: 10, Hash: h2},
			{Name: "link", Kind: KindSymlink, Mode: 0o777, Size: 8, Target: "../a.txt"},
		}, "tare-tree 1\n" +
			"file 0644 5 " + h1 + " \"a.txt\"\n" +
			"dir 0755 10 " + h2 + " \"bin\"\n" +
			"symlink 0777 8 \"../a.txt\" \"link\"\n"},
		{"executable and sticky", []Entry{
			{Name: "run", Kind: KindFile, Mode: 0o755, Hash: h1},
			{Name: "tmp", Kind: KindDir, Mode: 0o777 | fs.ModeSticky, Hash: h2},
		}, "tare-tree 1\n" +
			"file 0755 0 " + h1 + " \"run\"\n" +
			"dir 1777 0 " + h2 + " \"tmp\"\n"},
		{"names with spaces, newlines, quotes, invalid UTF-8", []Entry{
			{Name: "a b", Kind: KindFile, Mode: 0o600, Hash: h1},
			{Name: "line\nbreak", Kind: KindFile, Mode: 0o600, Hash: h1},
			{Name: "q\"uote", Kind: KindSymlink, Mode: 0o777, Size: 5, Target: "t \"x\""},
			{Name: "\xff\xfe", Kind: KindFile, Mode: 0o600, Hash: h1},
			{Name: "ünï", Kind: KindFile, Mode: 0o600, Hash: h1},
		}, "tare-tree 1\n" +
			"file 0600 0 " + h1 + " \"a b\"\n" +
			"file 0600 0 " + h1 + " \"line\\nbreak\"\n" +
			"symlink 0777 5 \"t \\\"x\\\"\" \"q\\\"uote\"\n" +
			"file 0600 0 " + h1 + " \"ünï\"\n" +
			"file 0600 0 " + h1 + " \"\\xff\\xfe\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries := append([]Entry(nil), tt.entries...)
			sortEntries(entries)
			got := string(encodeTree(entries))
			if got != tt.want {
				t.Fatalf("encode:\n%s\nwant:\n%s", got, tt.want)
			}
			back, err := decodeTree([]byte(got))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if len(back) == 0 && len(entries) == 0 {
				return
			}
			if !reflect.DeepEqual(back, entries) {
				t.Fatalf("round trip:\n%+v\nwant\n%+v", back, entries)
			}
		})
	}
}

func TestTreeOrderIsByteOrder(t *testing.T) {
	entries := []Entry{
		{Name: "b", Kind: KindFile, Mode: 0o644, Hash: h1},
		{Name: "a.txt", Kind: KindFile, Mode: 0o644, Hash: h1},
		{Name: "B", Kind: KindFile, Mode: 0o644, Hash: h1},
	}
	sortEntries(entries)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if strings.Join(names, ",") != "B,a.txt,b" {
		t.Fatalf("order %v", names)
	}
	// Same entries in any order: one encoding, one hash.
	again := []Entry{entries[2], entries[0], entries[1]}
	sortEntries(again)
	if hashBytes(encodeTree(entries)) != hashBytes(encodeTree(again)) {
		t.Fatal("same folder, two hashes")
	}
}

func TestDecodeTreeRejects(t *testing.T) {
	line := func(s string) string { return "tare-tree 1\n" + s }
	tests := []struct {
		name, data, want string
	}{
		{"no header", "file 0644 0 " + h1 + " \"a\"\n", "does not start"},
		{"other version", "tare-tree 2\n", "does not start"},
		{"truncated", line("file 0644 0 " + h1 + " \"a\""), "no newline"},
		{"unsorted", line("file 0644 0 " + h1 + " \"b\"\nfile 0644 0 " + h1 + " \"a\"\n"), "sorted"},
		{"duplicate", line("file 0644 0 " + h1 + " \"a\"\nfile 0644 0 " + h1 + " \"a\"\n"), "sorted"},
		{"dot dot", line("dir 0755 0 " + h1 + " \"..\"\n"), "invalid name"},
		{"slash", line("file 0644 0 " + h1 + " \"a/b\"\n"), "invalid name"},
		{"empty name", line("file 0644 0 " + h1 + " \"\"\n"), "invalid name"},
		{"NUL in name", line("file 0644 0 " + h1 + " \"a\\x00\"\n"), "invalid name"},
		{"short hash", line("file 0644 0 1234 \"a\"\n"), "bad hash"},
		{"upper-case hash", line("file 0644 0 " + strings.ToUpper("abcdef"+h1[6:]) + " \"a\"\n"), "bad hash"},
		{"unknown kind", line("fifo 0644 0 " + h1 + " \"a\"\n"), "unknown kind"},
		{"mode not octal", line("file 0999 0 " + h1 + " \"a\"\n"), "bad mode"},
		{"mode not canonical", line("file 644 0 " + h1 + " \"a\"\n"), "canonical"},
		{"negative size", line("file 0644 -1 " + h1 + " \"a\"\n"), "bad size"},
		{"unquoted name", line("file 0644 0 " + h1 + " a\n"), "bad name"},
		{"junk after name", line("file 0644 0 " + h1 + " \"a\" x\n"), "bad name"},
		{"name not canonically quoted", line("file 0644 0 " + h1 + " \"\\x61\"\n"), "canonical"},
		{"symlink mode", line("symlink 0755 1 \"t\" \"a\"\n"), "0777"},
		{"symlink size", line("symlink 0777 9 \"t\" \"a\"\n"), "0777"},
		{"symlink empty target", line("symlink 0777 0 \"\" \"a\"\n"), "bad target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeTree([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("decodeTree(%q) = %v, want an error containing %q", tt.data, err, tt.want)
			}
		})
	}
}
