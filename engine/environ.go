package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"tare/config"
	"tare/engine/run"
	"tare/environ"
	"tare/sandbox"
)

// envCache is tare's cache of built environments, with the host programs the config names.
func envCache(cfg *config.Config) environ.Cache {
	c := environ.Open(cfg.StateDir)
	c.Programs = cfg.Programs
	return c
}

// checkEnv is the options' check of --env (Validate): a folder with a Dockerfile whose
// context digests, or "" for a host-rooted run. It returns the folder's absolute path.
func checkEnv(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, _, err := environ.CheckFolder(dir)
	return abs, err
}

// buildEnv builds the run's --env folder (or finds its digest in the cache) before the run's
// folder is made, so a failed build leaves no run behind; nil for a host-rooted run.
func buildEnv(ctx context.Context, dir string, cfg *config.Config, progress io.Writer) (*environ.Env, error) {
	if dir == "" {
		return nil, nil
	}
	e, err := envCache(cfg).Build(ctx, dir, progress)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// OpenEnv checks and builds an environment folder (or finds its digest in the cache) for a
// caller that starts rooms of its own (the workshop's writers), and returns what their
// options carry: the folder, digest and WORKDIR. "" is nil: rooms rooted on the host.
func OpenEnv(ctx context.Context, dir string, cfg *config.Config, progress io.Writer) (*run.Env, error) {
	if _, err := checkEnv(dir); err != nil {
		return nil, err
	}
	e, err := buildEnv(ctx, dir, cfg, progress)
	if err != nil {
		return nil, err
	}
	return recipeEnv(e, false), nil
}

// recipeEnv is what the recipe keeps of a run's environment; fromImage when the start
// workspace is the image's WORKDIR contents.
func recipeEnv(e *environ.Env, fromImage bool) *run.Env {
	if e == nil {
		return nil
	}
	return &run.Env{Dir: e.Source, Digest: e.Digest, WorkDir: e.WorkDir, FromImage: fromImage}
}

// envImage is the room image of the recipe's environment: the cached image of its digest,
// else the folder built again (a Slurm node whose state is its own builds it), which must
// digest as the recipe says: a folder that changed since is refused, as the run's tails
// would otherwise measure another environment than its original did.
func envImage(ctx context.Context, ref *run.Env, cfg *config.Config, progress io.Writer) (*sandbox.Image, error) {
	if ref == nil {
		return nil, nil
	}
	cache := envCache(cfg)
	e, err := cache.Lookup(ref.Digest)
	if err != nil {
		if e, err = cache.Build(ctx, ref.Dir, progress); err != nil {
			return nil, fmt.Errorf("environment %s: not cached here, and building %s again failed: %v", ref.Short(), ref.Dir, err)
		}
		if e.Digest != ref.Digest {
			return nil, fmt.Errorf("environment %s: %s digests to %s now, not to the run's %s; fix: restore the folder as the run had it (tare rerun --yes repeats the run on the new image)",
				ref.Short(), ref.Dir, e.Short(), ref.Short())
		}
	}
	return roomOf(ctx, e, cfg)
}

// roomOf is the room image of a built environment, with tare's node runtime for the npm
// agent CLIs beside it.
func roomOf(ctx context.Context, e environ.Env, cfg *config.Config) (*sandbox.Image, error) {
	im := e.Room("")
	// A root cached by an older tare may lack a mount point rooms have since gained: they are
	// made now (the same folders as at export; a second try covers another tare making them
	// at the same moment).
	if err := sandbox.PrepareRoot(im.Root, im.WorkDir); err != nil {
		if err = sandbox.PrepareRoot(im.Root, im.WorkDir); err != nil {
			return nil, fmt.Errorf("environment %s: %v; fix: tare env rm %s, then run again (the image is built anew)", e.Short(), err, e.Short())
		}
	}
	runtime, err := envCache(cfg).AgentRuntime(ctx)
	if err != nil {
		return nil, fmt.Errorf("environment %s: the agent's node runtime: %v", e.Short(), err)
	}
	return e.Room(runtime), nil
}

// roomImage is the image every room of the env's run is rooted in (nil: the host), resolved
// once per process; the check's room gets it too.
func (env *tailEnv) roomImage(ctx context.Context) (*sandbox.Image, error) {
	env.imageOnce.Do(func() {
		env.image, env.imageErr = envImage(ctx, env.recipe.Env, env.cfg, nil)
	})
	return env.image, env.imageErr
}

// checkRoom is the recipe's check room, rooted in the run's image.
func (env *tailEnv) checkRoom(im *sandbox.Image) run.CheckRoom {
	cr := env.recipe.CheckRoom
	if !cr.OnHost {
		cr.Image = im
	}
	return cr
}

// envStart is the folder a run with an environment starts from when no --project was given:
// the image's WORKDIR contents, copied below the run's folder (the start capsule is taken
// from it; the caller removes it). project is returned as is otherwise.
func envStart(e *environ.Env, project, runDir string) (string, func(), error) {
	if e == nil || project != "" {
		return project, func() {}, nil
	}
	dir := filepath.Join(runDir, ".env-start")
	if err := e.CopyWorkDir(dir); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("environment %s: the image's WORKDIR %s: %v", e.Short(), e.WorkDir, err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// runName is what names a run's folder: the project, or for a run started from an image the
// task folder holding the environment folder (task/environment names it "task").
func runName(project, envDir string) string {
	if project == "" && envDir != "" {
		return filepath.Dir(envDir)
	}
	return project
}

// roomWork is where the workspace is in a room rooted in im: /work, or the image's WORKDIR.
func roomWork(im *sandbox.Image) string {
	if im != nil && im.WorkDir != "" {
		return im.WorkDir
	}
	return sandbox.WorkDir
}

// recipeCheckRoom is the recipe's check room as its report and journal name it: in the
// run's environment image when it has one.
func recipeCheckRoom(rec *run.Recipe) run.CheckRoom {
	cr := rec.CheckRoom
	if e := rec.Env; e != nil && !cr.OnHost && cr.Image == nil {
		wd := e.WorkDir
		if wd == "/" {
			wd = ""
		}
		cr.Image = &sandbox.Image{Digest: e.Digest, WorkDir: wd}
	}
	return cr
}

// startLabel names what a run started from, for its report's first line: the project, the
// image's WORKDIR, or the project in the image.
func startLabel(rec *run.Recipe) string {
	e := rec.Env
	switch {
	case e == nil:
		return rec.Project
	case rec.Project == "":
		return fmt.Sprintf("environment %s (%s), from its WORKDIR %s", e.Short(), e.Dir, e.WorkDir)
	}
	return fmt.Sprintf("%s in environment %s (%s) at %s", rec.Project, e.Short(), e.Dir, e.WorkDir)
}
