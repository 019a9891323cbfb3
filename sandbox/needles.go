package sandbox

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// needleFileMax bounds the files findNeedles reads: account data lives in small files.
const needleFileMax = 4 << 20

// findNeedles returns, for each needle, the regular files below dir that hold it. The probe
// uses it for what never reaches the model in a request but would sit in the room: an
// account email in an agent's config.
func findNeedles(dir string, needles []string, v *View) map[string][]string {
	if len(needles) == 0 {
		return nil
	}
	out := map[string][]string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > needleFileMax {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			v.Errors = append(v.Errors, "needles "+p+": "+errName(err))
			return nil
		}
		for _, n := range needles {
			if n != "" && bytes.Contains(data, []byte(n)) {
				out[n] = append(out[n], p)
			}
		}
		return nil
	})
	for _, files := range out {
		sort.Strings(files)
	}
	return out
}
