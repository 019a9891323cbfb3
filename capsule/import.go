package capsule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// A room never writes the run's store: its `tare snap` writes a staging store of its own
// (OpenStage), and the host takes the staged capsules in with Import once the room is gone.
// What a room wrote is not trusted, so Import reads it as hostile input.

// maxDepth bounds how deep a staged tree may nest: a chain of hand-made trees must not
// exhaust the importer's stack. No real workspace nests this deep.
const maxDepth = 4096

// Import takes the capsules staged in the folder stage into the store and returns them, in
// their staged order, renumbered after the store's latest capsule. Nothing in stage is
// trusted: every path is opened below it without following a symlink (a symlinked
// `blobs/ab` is refused, never followed); only regular files are read (a fifo, socket or
// device is refused unopened); every tree must hash to its name and be well formed, every
// blob must hash to its name and have the size its tree says. Objects the store already
// holds are not read again, so an import costs what the room added. It is all or nothing:
// on any problem it returns an error naming the staged path and what is wrong, and no
// record is added (objects already checked may stay: they are intact). A stage without a
// capsules folder staged nothing.
func (s *Store) Import(ctx context.Context, stage string) ([]Capsule, error) {
	fail := func(err error) ([]Capsule, error) {
		return nil, fmt.Errorf("import capsules staged in %s: %w", stage, err)
	}
	sfd, err := unix.Open(stage, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(noFollowError("open the staging folder", err))
	}
	defer unix.Close(sfd)
	unlock, err := s.lock()
	if err != nil {
		return fail(err)
	}
	defer unlock()

	names, err := readDirBeneath(sfd, "capsules")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return fail(noFollowError("capsules", err))
	}
	type staged struct {
		name string
		step int
	}
	var recs []staged
	for _, n := range names {
		if step, _, ok := recordName(n); ok {
			recs = append(recs, staged{n, step})
		}
	}
	slices.SortFunc(recs, func(a, b staged) int {
		if a.step != b.step {
			return a.step - b.step
		}
		return strings.Compare(a.name, b.name)
	})
	im := importer{s: s, ctx: ctx, stage: sfd, batch: newBatch(s), done: map[string]bool{}}
	var out []Capsule
	for _, r := range recs {
		rel := "capsules/" + r.name
		data, err := readWith(openStaged, sfd, rel, maxRecord)
		if err != nil {
			im.batch.abort()
			return fail(noFollowError(rel, err))
		}
		c, err := parseRecord(rel, r.name, data)
		if err == nil {
			err = im.tree(c.Root, 0)
		}
		if err != nil {
			im.batch.abort()
			return fail(fmt.Errorf("capsule %s: %w", rel, err))
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, nil
	}
	if err := s.addRecords(im.batch, out); err != nil {
		return fail(err)
	}
	return out, nil
}

// addRecords numbers caps after the store's latest capsule and writes their records once
// the batch's objects are durable. The caller holds the lock.
func (s *Store) addRecords(b *batch, caps []Capsule) error {
	names, err := s.recordNames()
	if err != nil {
		b.abort()
		return err
	}
	next := 0
	if len(names) > 0 {
		last, _, _ := recordName(names[len(names)-1])
		next = last + 1
	}
	var files []*AtomicFile
	abort := func() {
		for _, f := range files {
			f.Abort()
		}
		b.abort()
	}
	for i := range caps {
		caps[i].Step = next + i
		data, err := json.MarshalIndent(record{Format: recordFormat, Capsule: caps[i]}, "", "  ")
		if err != nil {
			abort()
			return err
		}
		a, err := s.create("capsules/"+caps[i].Name()+".json", 0o644)
		if err != nil {
			abort()
			return err
		}
		files = append(files, a)
		if _, err := a.Write(append(data, '\n')); err != nil {
			abort()
			return err
		}
	}
	if err := b.flush(files...); err != nil {
		for _, f := range files {
			f.Abort()
		}
		return err
	}
	for i, f := range files {
		if err := f.Commit(); err != nil {
			for _, rest := range files[i+1:] {
				rest.Abort()
			}
			return err
		}
	}
	return s.syncDir("capsules")
}

// importer copies the objects one import needs from the staging folder.
type importer struct {
	s     *Store
	ctx   context.Context
	stage int // the staging folder, open
	batch *batch
	done  map[string]bool // objects checked (and queued, or already stored)
}

// tree takes in the tree hash and everything below it that the store lacks.
func (im *importer) tree(hash string, depth int) error {
	if err := im.ctx.Err(); err != nil {
		return err
	}
	if depth > maxDepth {
		return fmt.Errorf("trees nest more than %d deep", maxDepth)
	}
	rel := objectRel("trees", hash)
	if im.done[rel] || im.batch.has(rel) {
		// A stored tree's objects are stored: a snapshot stores them first.
		im.done[rel] = true
		return nil
	}
	data, err := readWith(openStaged, im.stage, rel, maxTree)
	if err != nil {
		return noFollowError("staged "+rel, err)
	}
	if got := hashBytes(data); got != hash && !mutations.noHash {
		return fmt.Errorf("staged %s is refused: its content hashes to %s", rel, got)
	}
	entries, err := decodeTree(data)
	if err != nil {
		return fmt.Errorf("staged %s is refused: malformed: %v", rel, err)
	}
	for _, e := range entries {
		switch e.Kind {
		case KindDir:
			err = im.tree(e.Hash, depth+1)
		case KindFile:
			err = im.blob(e.Hash, e.Size)
		}
		if err != nil {
			return err
		}
	}
	im.done[rel] = true
	return im.batch.put(rel, data)
}

// blob copies in the blob hash of size bytes unless the store has it, checking both.
func (im *importer) blob(hash string, size int64) error {
	rel := objectRel("blobs", hash)
	if im.done[rel] || im.batch.has(rel) {
		im.done[rel] = true
		return nil
	}
	f, st, err := openStaged(im.stage, rel)
	if err != nil {
		return noFollowError("staged "+rel, err)
	}
	defer f.Close()
	if st.Size != size {
		return fmt.Errorf("staged %s is refused: %d bytes, its tree says %d", rel, st.Size, size)
	}
	a, err := im.batch.create(rel)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(a, h), io.LimitReader(f, size+1))
	if err != nil {
		a.Abort()
		return fmt.Errorf("copy staged %s: %w", rel, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); (got != hash || n != size) && !mutations.noHash {
		a.Abort()
		return fmt.Errorf("staged %s is refused: its content hashes to %s (%d bytes)", rel, got, n)
	}
	im.done[rel] = true
	return im.batch.add(rel, a)
}
