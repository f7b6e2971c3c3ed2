package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/runtime"
)

func newCacheCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Show where compiled tool code is cached, fill the cache (warm), or prune it",
		Long: `Show where compiled tool code is cached (tools.cache_dir), how much it holds, and
its bound (tools.cache_max). The cache keeps, per module and machine, the instrumented
module, wazero's compiled code and the module's descriptor manifest (its tools'
listing); a start finds a module there by the sha256 of its bytes and lists and runs it
without compiling. Removing the directory is always safe: what is missing compiles again.

warden cache warm compiles every module of tools.dir into the cache, for an image or a
CI job to start warm. warden cache prune removes the least recently used entries until
the cache fits its bound (a load that writes to the cache does the same).`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.requireConfig(); err != nil {
				return err
			}
			cfg, err := config.Load(g.configPath)
			if err != nil {
				return usageError{textError{err}}
			}
			dir, err := cacheDir(cfg)
			if err != nil {
				return err
			}
			return printCache(cmd.OutOrStdout(), dir, uint64(cfg.Tools.CacheMax))
		},
	}
	var to config.ByteSize
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Remove the least recently used cache entries until the cache fits tools.cache_max",
		Long: `Remove whole entries of the compile cache (compiled code, instrumented modules,
descriptor manifests), least recently used first, until what they hold fits
tools.cache_max, or the size --to gives. A warden using the same cache meanwhile only
compiles again what it finds removed. Loads prune the same way after they write to the
cache, so this is for making room at once (--to 0 empties it).`,
		Example: `  warden cache prune
  warden cache prune --to 500MiB`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.requireConfig(); err != nil {
				return err
			}
			cfg, err := config.Load(g.configPath)
			if err != nil {
				return usageError{textError{err}}
			}
			dir, err := cacheDir(cfg)
			if err != nil {
				return err
			}
			bound := uint64(cfg.Tools.CacheMax)
			if cmd.Flags().Changed("to") {
				bound = uint64(to)
			}
			p, err := runtime.PruneCache(dir, bound, nil)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %d %s (%s); %s now holds %d %s, %s of %s\n",
				p.Removed, plural(p.Removed, "entry", "entries"), config.ByteSize(p.Freed), termsafe.Line(dir),
				p.After.Entries, plural(p.After.Entries, "entry", "entries"), config.ByteSize(p.After.Bytes), config.ByteSize(bound))
			return nil
		},
	}
	prune.Flags().Var(byteSizeFlag{&to}, "to", "prune to this size instead of tools.cache_max (e.g. 500MiB; 0 empties the cache)")
	prune.Flags().AddFlagSet(g.flags())
	cmd.AddCommand(prune)
	warm := &cobra.Command{
		Use:   "warm",
		Short: "Compile every module of tools.dir into the cache, for a warm start",
		Long: `Compile every module of tools.dir into the cache (tools.cache_dir) for this machine:
its instrumented module, its compiled code and its descriptor manifest. The next start
(serve, call, tools) then lists every tool and serves its first call without compiling.
Run it where the server will run (a container image's build, a CI job): compiled code
is for this CPU and this warden. The exit status is 1 when a module failed to load;
the others are cached all the same.`,
		Example: `  warden cache warm --config /etc/warden/config.yaml`,
		Args:    cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := g.requireConfig(); err != nil {
				return err
			}
			a, _, err := g.start(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close(cmd.Context())
			dir, err := cacheDir(a.Config())
			if err != nil {
				return err
			}
			start := time.Now()
			stop := showLoads(a)
			errs := a.Catalog().Warm(cmd.Context())
			stop()
			for _, err := range errs {
				fmt.Fprintln(cmd.ErrOrStderr(), "warden:", termsafe.Message(err.Error()))
			}
			modules := len(a.Catalog().Table().Modules())
			fmt.Fprintf(cmd.OutOrStdout(), "%d %s cached in %s (%v)\n", modules, plural(modules, "module", "modules"),
				termsafe.Line(dir), time.Since(start).Round(time.Millisecond))
			if len(errs) > 0 {
				return fmt.Errorf("%d %s", len(errs), plural(len(errs), "module failed to load", "modules failed to load"))
			}
			return nil
		},
	}
	warm.Flags().AddFlagSet(g.flags())
	cmd.AddCommand(warm)
	return cmd
}

// cacheDir is the compile cache cfg uses, or why there is none.
func cacheDir(cfg *config.Config) (string, error) {
	switch cfg.Tools.CacheDir {
	case "off":
		return "", errors.New("the compile cache is off (tools.cache_dir: off): every start compiles every module it calls")
	case "":
		dir, err := runtime.DefaultCacheDir()
		if err != nil {
			return "", fmt.Errorf("compile cache: %w (set tools.cache_dir)", err)
		}
		return dir, nil
	}
	return cfg.Tools.CacheDir, nil
}

// printCache prints where the cache is and what it holds: the files and
// bytes under each of its parts, and in all.
func printCache(w io.Writer, dir string, bound uint64) error {
	type part struct {
		files int
		bytes int64
	}
	parts := map[string]*part{}
	var order []string
	total := part{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == dir {
				return fs.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if top == rel {
			top = "(index, lock)" // the cache's own files
		}
		p := parts[top]
		if p == nil {
			p = &part{}
			parts[top] = p
			order = append(order, top)
		}
		p.files++
		p.bytes += info.Size()
		total.files++
		total.bytes += info.Size()
		return nil
	})
	if err != nil {
		return fmt.Errorf("compile cache %s: %w", dir, err)
	}
	fmt.Fprintf(w, "%s\n", termsafe.Line(dir))
	slices.Sort(order)
	for _, name := range order {
		p := parts[name]
		fmt.Fprintf(w, "  %-28s %5d %s  %s\n", termsafe.Line(name), p.files, plural(p.files, "file ", "files"), config.ByteSize(p.bytes))
	}
	fmt.Fprintf(w, "  %-28s %5d %s  %s\n", "total", total.files, plural(total.files, "file ", "files"), config.ByteSize(total.bytes))
	size, err := runtime.CacheSizeOf(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  %-28s %5d %s  %s of %s (tools.cache_max; warden cache prune)\n", "entries", size.Entries,
		plural(size.Entries, "entry", "entries"), config.ByteSize(size.Bytes), config.ByteSize(bound))
	return nil
}

// byteSizeFlag is a flag of a size written as config.yaml writes sizes.
type byteSizeFlag struct{ v *config.ByteSize }

func (f byteSizeFlag) String() string {
	if f.v == nil {
		return "0 B"
	}
	return f.v.String()
}

func (f byteSizeFlag) Set(s string) error {
	n, err := config.ParseByteSize(s)
	if err != nil {
		return err
	}
	*f.v = n
	return nil
}

func (byteSizeFlag) Type() string { return "size" }
