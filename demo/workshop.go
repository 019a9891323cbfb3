package demo

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed workshop
var workshopFiles embed.FS

// WorkshopQuotaWriter is the demo workshop's writer that hits a provider quota wall mid-draft
// (quota.toml) and is resumed in its own session once the wall has lifted (quota-lifted.toml).
const WorkshopQuotaWriter = "codex-gpt-5.1-codex"

// WorkshopPaths are where ExtractWorkshop put the demo workshop.
type WorkshopPaths struct {
	// Plan is the example plan, its material beside it.
	Plan string
	// Writer is the model script every writer but the quota one replays.
	Writer string
	// Quota and QuotaLifted are the quota writer's scripts before and after the wall.
	Quota, QuotaLifted string
}

// ExtractWorkshop writes the demo workshop (a plan, its material and the model scripts) into
// dir, which must not exist yet.
func ExtractWorkshop(dir string) (WorkshopPaths, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return WorkshopPaths{}, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return WorkshopPaths{}, fmt.Errorf("demo folder %s: %v", dir, err)
	}
	sub, err := fs.Sub(workshopFiles, "workshop")
	if err != nil {
		return WorkshopPaths{}, err
	}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return WorkshopPaths{}, err
	}
	return WorkshopPaths{Plan: filepath.Join(dir, "plan.toml"), Writer: filepath.Join(dir, "writer.toml"),
		Quota: filepath.Join(dir, "quota.toml"), QuotaLifted: filepath.Join(dir, "quota-lifted.toml")}, nil
}
