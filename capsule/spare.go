package capsule

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// A watcher's store keeps spare files: empty files made ahead of time in the store's .spare
// folder, which a capsule writes its objects and record into and renames into place
// instead of creating each file while the agent waits.
//
// Why: making a file (allocating an inode) is most of a served capsule's time on some file
// systems. ext4 without a journal skips every free inode that was deleted in the last
// minutes, reading each one's on-disk record to find that out, so one create after a
// `rm -rf` or a test cleanup nearby cost about a millisecond, and a step made eight. A spare
// is made after the hook was answered, while the agent goes on with its next tool call.
// What the capsule writes and syncs is unchanged: the spare's content, its folder entry
// under the object's name, fsynced before the answer, as for a fresh file.
//
// The room can write the staging store, .spare included, as it can every staged object:
// the host imports nothing it did not check against its hash (Import), so a spare
// tampered with makes a capsule the host refuses, never one it trusts.

// spareDir is the folder of a store's spare files (hidden: Verify, Import and gc pass it).
const spareDir = ".spare"

// spareCount is how many spares a store keeps: a step that changed one file needs its blob,
// a tree per folder on its path and its record.
const spareCount = 16

// spares is a store's pool of spare files.
type spares struct {
	dirfd   int
	dir     string // for messages
	mu      sync.Mutex
	files   []spareFile
	filling bool
	closed  bool
	wg      sync.WaitGroup // refills under way

	// durable holds the fan-out folders (blobs/ab) whose entry in their parent this
	// process has fsynced: a later capsule with an object in one syncs the fan-out folder
	// only, one flush fewer. (A watcher's staging store: no gc removes its folders.)
	durable sync.Map
}

// entryDurable reports whether the fan-out folder dir is known to be durable in its
// parent; a store without spares knows none.
func (p *spares) entryDurable(dir string) bool {
	if p == nil {
		return false
	}
	_, ok := p.durable.Load(dir)
	return ok
}

// entrySynced records that dir's parent was fsynced with dir in it.
func (p *spares) entrySynced(dir string) {
	if p != nil {
		p.durable.Store(dir, true)
	}
}

type spareFile struct {
	f    *os.File
	name string
}

// keepSpares makes the store write through spare files from now on, and makes the first.
func (s *Store) keepSpares() error {
	if err := unix.Mkdirat(s.root, spareDir, 0o700); err != nil && err != unix.EEXIST {
		return fmt.Errorf("store %s: make %s: %w", s.dir, spareDir, err)
	}
	fd, err := openBeneath(s.root, spareDir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return noFollowError("store "+s.dir+": "+spareDir, err)
	}
	s.spares = &spares{dirfd: fd, dir: filepath.Join(s.dir, spareDir)}
	s.spares.refill()
	return nil
}

// refillLater refills the pool in the background (after a capsule was answered).
func (p *spares) refillLater() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.filling || p.closed || len(p.files) >= spareCount {
		return
	}
	p.filling = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.fill()
	}()
}

// refill makes spares up to spareCount now.
func (p *spares) refill() {
	p.mu.Lock()
	if p.filling || p.closed {
		p.mu.Unlock()
		return
	}
	p.filling = true
	p.mu.Unlock()
	p.fill()
}

// fill makes spares up to spareCount, p.filling being set by the caller; a failure only
// means the next capsule creates its files itself.
func (p *spares) fill() {
	p.mu.Lock()
	need := spareCount - len(p.files)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.filling = false
		p.mu.Unlock()
	}()
	var raw [8]byte
	for range need {
		if _, err := rand.Read(raw[:]); err != nil {
			return
		}
		name := "spare-" + hex.EncodeToString(raw[:])
		fd, err := unix.Openat(p.dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return
		}
		p.mu.Lock()
		p.files = append(p.files, spareFile{f: os.NewFile(uintptr(fd), filepath.Join(p.dir, name)), name: name})
		p.mu.Unlock()
	}
}

// take starts an AtomicFile for name in the folder dstfd (closed with it if ownDst) from a
// spare, or returns nil when none is left. path is the final path, for messages.
func (p *spares) take(dstfd int, ownDst bool, name, path string, perm fs.FileMode) *AtomicFile {
	for {
		p.mu.Lock()
		if len(p.files) == 0 {
			p.mu.Unlock()
			return nil
		}
		sp := p.files[len(p.files)-1]
		p.files = p.files[:len(p.files)-1]
		p.mu.Unlock()
		a := &AtomicFile{f: sp.f, path: path, dir: p.dirfd, tmp: sp.name, dst: dstfd, name: name, ownDst: ownDst}
		// Empty and ours to write: anything else in its place (the room can write here) is
		// thrown away, not used.
		var st unix.Stat_t
		if unix.Fstat(int(sp.f.Fd()), &st) != nil || st.Size != 0 || st.Nlink != 1 || sp.f.Chmod(perm) != nil {
			a.ownDst = false
			a.Abort()
			continue
		}
		return a
	}
}

// close removes the spares left (a watcher that ends), once any refill is done.
func (p *spares) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, sp := range p.files {
		sp.f.Close()
		unix.Unlinkat(p.dirfd, sp.name, 0)
	}
	p.files = nil
	unix.Close(p.dirfd)
}
