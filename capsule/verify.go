package capsule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
)

// Verify checks the whole store: every blob and tree hashes to its name, every tree is
// well formed, every capsule record is readable and everything its root reaches is present
// and intact. It returns nil or one error listing every problem, each naming the object
// (and the capsule and path that use it).
func (s *Store) Verify(ctx context.Context) error {
	v := verifier{s: s, ctx: ctx, blobs: map[string]blobState{}, trees: map[string][]Entry{}, bad: map[string]bool{}}
	if err := v.objects("blobs", v.blob); err != nil {
		return err
	}
	if err := v.objects("trees", v.tree); err != nil {
		return err
	}
	names, err := s.recordNames()
	if err != nil {
		return err
	}
	recordFiles, _ := readDirBeneath(s.root, "capsules")
	for _, n := range recordFiles {
		if _, _, ok := recordName(n); !ok && !strings.HasPrefix(n, ".") {
			v.problem(fmt.Errorf("capsules/%s: not a capsule record name (NNNN-<tool-use-id>.json)", n))
		}
	}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := s.readRecord(n)
		if err != nil {
			v.problem(err)
			continue
		}
		v.reach(c, "", c.Root)
	}
	if len(v.problems) == 0 {
		return nil
	}
	return fmt.Errorf("store %s has %d problem(s):\n%w", s.dir, len(v.problems), errors.Join(v.problems...))
}

type blobState struct {
	size int64
	ok   bool
}

type verifier struct {
	s        *Store
	ctx      context.Context
	blobs    map[string]blobState
	trees    map[string][]Entry // intact trees
	bad      map[string]bool    // trees found corrupt or malformed
	problems []error
	seen     map[string]bool // trees already walked from a capsule
}

func (v *verifier) problem(err error) { v.problems = append(v.problems, err) }

// objects runs check on every object file below kind ("blobs" or "trees").
func (v *verifier) objects(kind string, check func(hash, file string) error) error {
	top := filepath.Join(v.s.dir, kind)
	fans, err := readDirBeneath(v.s.root, kind)
	if err != nil {
		return noFollowError("store "+v.s.dir+": "+kind, err)
	}
	for _, fan := range fans {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		names, err := readDirBeneath(v.s.root, kind+"/"+fan)
		if err != nil {
			v.problem(noFollowError(kind+"/"+fan, err))
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(n, ".") {
				continue // a temporary file of a snapshot in progress or interrupted
			}
			file := filepath.Join(top, fan, n)
			if !isHash(fan + n) {
				v.problem(fmt.Errorf("%s/%s/%s: not named by a sha256 hash", kind, fan, n))
				continue
			}
			if err := check(fan+n, file); err != nil {
				v.problem(err)
			}
		}
	}
	return nil
}

func (v *verifier) blob(hash, file string) error {
	f, _, err := openRegular(v.s.root, objectRel("blobs", hash))
	if err != nil {
		return noFollowError("blob "+hash+" ("+file+")", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("blob %s: %w", hash, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	v.blobs[hash] = blobState{size: n, ok: got == hash}
	if got != hash {
		return fmt.Errorf("blob %s is corrupt: its content hashes to %s (%s)", hash, got, file)
	}
	return nil
}

func (v *verifier) tree(hash, file string) error {
	entries, err := v.s.readTree(hash)
	if err != nil {
		v.bad[hash] = true
		return fmt.Errorf("%w (%s)", err, file)
	}
	v.trees[hash] = entries
	return nil
}

// reach checks that everything below tree (at path p of capsule c) is present and intact.
func (v *verifier) reach(c Capsule, p, tree string) {
	if v.seen == nil {
		v.seen = map[string]bool{}
	}
	where := func() string {
		if p == "" {
			return "its root"
		}
		return p
	}
	entries, ok := v.trees[tree]
	if !ok {
		if v.bad[tree] {
			v.problem(fmt.Errorf("capsule %s: tree %s (%s) is damaged", c.Name(), tree, where()))
		} else {
			v.problem(fmt.Errorf("capsule %s: tree %s (%s) is missing from the store", c.Name(), tree, where()))
		}
		return
	}
	if v.seen[tree] {
		return // checked from an earlier capsule; its problems are reported there
	}
	v.seen[tree] = true
	for _, e := range entries {
		ep := path.Join(p, e.Name)
		switch e.Kind {
		case KindDir:
			v.reach(c, ep, e.Hash)
		case KindFile:
			b, ok := v.blobs[e.Hash]
			switch {
			case !ok:
				v.problem(fmt.Errorf("capsule %s: blob %s (for %s) is missing from the store", c.Name(), e.Hash, ep))
			case !b.ok:
				v.problem(fmt.Errorf("capsule %s: blob %s (for %s) is corrupt", c.Name(), e.Hash, ep))
			case b.size != e.Size:
				v.problem(fmt.Errorf("capsule %s: blob %s (for %s) has %d bytes, the tree says %d", c.Name(), e.Hash, ep, b.size, e.Size))
			}
		}
	}
}
