package capsule

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The benchmarks compare one step of a run: the agent changed one file of a workspace of
// 10,000 files / 100 MB, and the step is recorded.
//
//	go test -bench 'Snap|Tar' -run '^$' ./capsule
//
// store-B/op is what the step added to the store; changed-B/op is the changed file's size.

const (
	benchFiles = 10_000
	benchBytes = 100_000_000
)

// benchWorkspace generates the workspace: 10 × 10 folders of 100 files, sizes from 2 kB to
// 18 kB (10 kB on average), deterministic content.
func benchWorkspace(b *testing.B) (string, []string) {
	b.Helper()
	ws := filepath.Join(b.TempDir(), "ws")
	var files []string
	var total int64
	buf := make([]byte, 20_000)
	for i := range benchFiles {
		rel := fmt.Sprintf("d%d/e%d/f%03d.dat", i/1000, i/100%10, i%100)
		size := 2_000 + (i*7_919)%16_001
		fill(buf[:size], uint64(i), 0)
		p := filepath.Join(ws, rel)
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, buf[:size], 0o644); err != nil {
			b.Fatal(err)
		}
		files = append(files, rel)
		total += int64(size)
	}
	if total < benchBytes*99/100 || total > benchBytes*101/100 {
		b.Fatalf("workspace is %d bytes, want about %d", total, benchBytes)
	}
	return ws, files
}

func fill(buf []byte, file, version uint64) {
	var seed [32]byte
	for i := range 8 {
		seed[i] = byte(file >> (8 * i))
		seed[8+i] = byte(version >> (8 * i))
	}
	rand.NewChaCha8(seed).Read(buf)
}

// changeOne rewrites file number i of the workspace with new content of the same size.
func changeOne(b *testing.B, ws string, files []string, i int) int64 {
	p := filepath.Join(ws, files[(i*37)%len(files)])
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, fi.Size())
	fill(buf, uint64(i), uint64(i)+1)
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// storeSize is the total size of the files in a store folder.
func storeSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// benchSnap runs one step per iteration: change a file (not timed), take the capsule.
func benchSnap(b *testing.B, take func(s *Store, ws string, w *Watcher, changed string, id string) (Capsule, error)) {
	ws, files := benchWorkspace(b)
	s, err := Open(filepath.Join(b.TempDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	w, err := NewWatcher(ws)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if _, err := s.Snap(context.Background(), ws, "start"); err != nil {
		b.Fatal(err)
	}
	before := storeSize(b, s.dir)
	var steps int
	var changed int64
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		changed += changeOne(b, ws, files, steps)
		b.StartTimer()
		began := time.Now()
		c, err := take(s, ws, w, files[(steps*37)%len(files)], fmt.Sprintf("toolu_%d", steps))
		took = append(took, time.Since(began))
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Unreadable) != 0 {
			b.Fatal(c.Unreadable)
		}
		steps++
	}
	b.StopTimer()
	b.ReportMetric(float64(storeSize(b, s.dir)-before)/float64(steps), "store-B/op")
	b.ReportMetric(float64(changed)/float64(steps), "changed-B/op")
	// The mean is at the mercy of the disk's slowest flushes; the median says what a step costs.
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/step")
	b.ReportMetric(float64(took[len(took)*9/10].Nanoseconds()), "p90-ns/step")
	// The last capsule is right: the same root as a full walk into a fresh store.
	list, err := s.List()
	if err != nil {
		b.Fatal(err)
	}
	fresh, err := Open(filepath.Join(b.TempDir(), "verify"))
	if err != nil {
		b.Fatal(err)
	}
	full, err := fresh.Snap(context.Background(), ws, "verify")
	if err != nil {
		b.Fatal(err)
	}
	if last := list[len(list)-1]; last.Root != full.Root {
		b.Fatalf("last capsule %s has root %s, a full walk gives %s", last.Name(), last.Root, full.Root)
	}
}

// BenchmarkSnapOneChange is the per-step path: a Watcher hands the dirty paths to SnapDirty.
func BenchmarkSnapOneChange(b *testing.B) {
	benchSnap(b, func(s *Store, ws string, w *Watcher, changed, id string) (Capsule, error) {
		c, err := s.SnapWatched(context.Background(), w, id)
		if err == nil && c.Walk != "dirty" {
			err = fmt.Errorf("capsule %s: walk %s, want dirty", c.Name(), c.Walk)
		}
		return c, err
	})
}

// BenchmarkSnapDirtyListOneChange is SnapDirty with the dirty path given explicitly.
func BenchmarkSnapDirtyListOneChange(b *testing.B) {
	benchSnap(b, func(s *Store, ws string, w *Watcher, changed, id string) (Capsule, error) {
		return s.SnapDirty(context.Background(), ws, id, []string{changed})
	})
}

// BenchmarkSnapFullWalkOneChange is the fallback: a full walk with the stat cache.
func BenchmarkSnapFullWalkOneChange(b *testing.B) {
	benchSnap(b, func(s *Store, ws string, w *Watcher, changed, id string) (Capsule, error) {
		return s.Snap(context.Background(), ws, id)
	})
}

// BenchmarkTarWholeWorkspace is what the Python original did per step: tar the whole
// workspace into a new file (capsules/NNNN-<id>.tar). The previous step's tar is removed,
// untimed, to keep the disk bounded; the original kept them all.
func BenchmarkTarWholeWorkspace(b *testing.B) {
	ws, _ := benchWorkspace(b)
	dir := b.TempDir()
	var size int64
	var step int
	for b.Loop() {
		if step > 0 {
			b.StopTimer()
			if err := os.Remove(filepath.Join(dir, fmt.Sprintf("%04d.tar", step-1))); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%04d.tar", step)))
		step++
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := tarTree(tar.NewWriter(bw), ws); err != nil {
			b.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		fi, _ := f.Stat()
		size = fi.Size()
		f.Close()
	}
	b.ReportMetric(float64(size), "store-B/op") // the original kept every step's tar
}

func tarTree(tw *tar.Writer, root string) error {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
