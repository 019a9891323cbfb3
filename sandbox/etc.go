package sandbox

import (
	"io"
	"io/fs"
	"os"
)

// etcMax bounds an /etc file Start copies; a bigger one is bound as before.
const etcMax = 4 << 20

// etcCopy reads the host file at p (following a symlink, as a bind does) into a memory file
// for `bwrap --file`, with its mode. It returns no file, and no error, for what it leaves to
// a bind: a path that is missing (--ro-bind-try skips it), a folder, anything not a regular
// file, a file it cannot read or one over etcMax.
func etcCopy(p, dir string) (*os.File, fs.FileMode, error) {
	src, err := os.Open(p)
	if err != nil {
		return nil, 0, nil
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > etcMax {
		return nil, 0, nil
	}
	data, err := io.ReadAll(io.LimitReader(src, etcMax+1))
	if err != nil || len(data) > etcMax {
		return nil, 0, nil
	}
	f, err := dataFile("etc", data, dir)
	return f, st.Mode().Perm(), err
}
