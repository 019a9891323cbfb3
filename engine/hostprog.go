package engine

import (
	"path/filepath"
	"slices"

	"tare/config"
	"tare/sandbox"
)

// slurmTools are Slurm's commands tare runs on the host; cluster.bin_dir names their folder.
var slurmTools = []string{"sbatch", "squeue", "scancel", "sinfo", "srun"}

// HostProgram finds name, a program tare runs on the host (outside any room), through
// sandbox.LookHost: the config's path for it (programs.NAME, or cluster.bin_dir for Slurm's
// commands) when set, else PATH, with every entry an agent can write refused: the working
// folder, the projects, the state folder (tails' workspaces) and the cluster's shared folder.
func HostProgram(cfg *config.Config, name string, projects ...string) (string, error) {
	p := sandbox.HostProgram{Name: name, Key: `programs.` + name + ` = "/usr/bin/` + name + `"`, Avoid: projects}
	if cfg == nil {
		cfg, _ = config.Load(config.File())
	}
	if cfg != nil {
		p.Avoid = append(p.Avoid, cfg.StateDir, cfg.Cluster.Shared)
		p.Path = cfg.Programs[name]
		if slices.Contains(slurmTools, name) && p.Path == "" {
			p.Key = `cluster.bin_dir = "/usr/bin"`
			if cfg.Cluster.BinDir != "" {
				p.Path = filepath.Join(cfg.Cluster.BinDir, name)
			}
		}
	}
	return sandbox.LookHost(p)
}
