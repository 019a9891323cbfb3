package capsule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// GCReport is what one collection of a store found: what it removed, or would remove in a
// dry run, and what it left.
type GCReport struct {
	// Live counts the objects a capsule reaches or the stat cache names: never removed.
	Live int
	// Objects counts the blobs and trees no capsule reaches, removed.
	Objects int
	// Temps counts the temporary files of writers that died (*.tmp-*), removed.
	Temps int
	// Bytes is the size of what was removed.
	Bytes int64
	// Young counts unreferenced objects and temporary files left because they were written
	// after the cutoff.
	Young int
}

// Add sums o into r.
func (r *GCReport) Add(o GCReport) {
	r.Live += o.Live
	r.Objects += o.Objects
	r.Temps += o.Temps
	r.Bytes += o.Bytes
	r.Young += o.Young
}

// GC removes the blobs and trees of the store that no capsule reaches (a snapshot that died
// before its record, a record's objects whose import failed), and the temporary files of
// writers that died, if they were last written before now minus keep. With dryRun it
// removes nothing and reports what it would remove.
//
// It holds the store's lock from the mark to the end of the sweep, so no snapshot or import
// writes meanwhile, and the cutoff is taken after the lock: an object written after the mark
// began is never removed. Objects the stat cache names count as reached (a snapshot trusts
// the cache not to store them again). Any record or tree that cannot be read stops the
// collection before it removed anything: what is reachable is then unknown.
//
// A room's staging store over this one (OpenStage) does not write what it finds here, so it
// counts on objects no capsule of this store may reach yet: collect a run's store only
// while none of its rooms is running (the engine's gc holds the run's lock).
func (s *Store) GC(ctx context.Context, keep time.Duration, dryRun bool) (GCReport, error) {
	var rep GCReport
	if s.base != nil {
		return rep, fmt.Errorf("store %s is a room's staging store: collect the run's store it stages over", s.dir)
	}
	if keep < 0 {
		return rep, fmt.Errorf("gc of %s: keep %v is negative", s.dir, keep)
	}
	unlock, err := s.lock()
	if err != nil {
		return rep, err
	}
	defer unlock()
	cutoff := time.Now().Add(-keep)
	live, err := s.mark(ctx)
	if err != nil {
		return rep, fmt.Errorf("gc of %s: %w; nothing was removed", s.dir, err)
	}
	rep.Live = len(live)
	for _, kind := range []string{"blobs", "trees"} {
		fans, err := readDirBeneath(s.root, kind)
		if err != nil {
			return rep, noFollowError("gc of "+s.dir+": "+kind, err)
		}
		for _, fan := range fans {
			if len(fan) != 2 || !isHash(fan+strings.Repeat("0", 62)) {
				continue
			}
			if err := s.sweepFolder(kind+"/"+fan, func(name string) bool {
				return isHash(fan+name) && !live[kind+"/"+fan+name]
			}, cutoff, dryRun, &rep); err != nil {
				return rep, err
			}
			if err := ctx.Err(); err != nil {
				return rep, err
			}
		}
	}
	for _, dir := range []string{"capsules", "cache"} {
		if err := s.sweepFolder(dir, func(string) bool { return false }, cutoff, dryRun, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// mark returns every object ("blobs/HASH", "trees/HASH") reached from a capsule record or
// named by a stat cache file.
func (s *Store) mark(ctx context.Context) (map[string]bool, error) {
	live := map[string]bool{}
	var reach func(tree string, must bool) error
	reach = func(tree string, must bool) error {
		if live["trees/"+tree] {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := s.readTree(tree)
		if err != nil {
			if !must {
				return nil // a cache's hint at a tree that is gone: nothing to keep
			}
			return err
		}
		live["trees/"+tree] = true
		for _, e := range entries {
			switch e.Kind {
			case KindFile:
				live["blobs/"+e.Hash] = true
			case KindDir:
				if err := reach(e.Hash, must); err != nil {
					return err
				}
			}
		}
		return nil
	}
	names, err := s.recordNames()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		c, err := s.readRecord(n)
		if err != nil {
			return nil, err
		}
		if err := reach(c.Root, true); err != nil {
			return nil, fmt.Errorf("capsule %s: %w", n, err)
		}
	}
	caches, err := readDirBeneath(s.root, "cache")
	if err != nil {
		return nil, noFollowError("store "+s.dir+": cache", err)
	}
	for _, n := range caches {
		if strings.HasPrefix(n, ".") {
			continue
		}
		c, ok := s.readCacheFile("cache/" + n)
		if !ok {
			continue // ignored by snapshots too
		}
		for _, e := range c.entries {
			live["blobs/"+e.hash] = true
		}
		if c.tree != "" {
			if err := reach(c.tree, false); err != nil {
				return nil, err
			}
		}
	}
	return live, nil
}

// readCacheFile reads a stat cache file whatever folder it is for, as loadCache would.
func (s *Store) readCacheFile(rel string) (*dirCache, bool) {
	data, err := readRegular(s.root, rel, maxCache)
	if err != nil || len(data) < len(cacheMagic) {
		return nil, false
	}
	r := cacheReader{b: data[len(cacheMagic):]}
	folder := r.str()
	if r.err != nil {
		return nil, false
	}
	c, err := decodeCache(data, folder)
	return c, err == nil
}

// sweepFolder removes the files of dir (below the store) that garbage says are garbage,
// and the temporary files of writers that died, if last changed before cutoff.
func (s *Store) sweepFolder(dir string, garbage func(name string) bool, cutoff time.Time, dryRun bool, rep *GCReport) error {
	fd, err := openBeneath(s.root, dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return noFollowError("gc of "+s.dir+": "+dir, err)
	}
	defer unix.Close(fd)
	names, err := readDirNames(fd)
	if err != nil {
		return fmt.Errorf("gc of %s: list %s: %w", s.dir, dir, err)
	}
	for _, name := range names {
		temp := strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
		if !temp && !garbage(name) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("gc of %s: stat %s/%s: %w", s.dir, dir, name, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue // not tare's: left alone
		}
		// The later of mtime and ctime: putting an object in place (a rename) sets ctime.
		changed := time.Unix(st.Mtim.Unix())
		if c := time.Unix(st.Ctim.Unix()); c.After(changed) {
			changed = c
		}
		if !changed.Before(cutoff) {
			rep.Young++
			continue
		}
		if !dryRun {
			if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("gc of %s: remove %s/%s: %w", s.dir, dir, name, err)
			}
		}
		if temp {
			rep.Temps++
		} else {
			rep.Objects++
		}
		rep.Bytes += st.Size
	}
	return nil
}

// Describe says what r removed: "3 objects and 1 leftover file, 1.2 MB".
func (r GCReport) Describe() string {
	plural := func(n int, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	return fmt.Sprintf("%s and %s, %s", plural(r.Objects, "object"), plural(r.Temps, "leftover file"), humanBytes(r.Bytes))
}

// humanBytes is n in B, kB, MB or GB (powers of 1000, as du --si).
func humanBytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000_000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1000_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}
