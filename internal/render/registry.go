package render

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/apiaryhq/apiary/templates"
)

// Names of the built-in bundles.
const (
	// ColonyClusterBundle renders one ClusterDeployment for one Colony entry.
	ColonyClusterBundle = "colony-cluster"
	// WorkspaceServiceSetBundle renders the ServiceSet of a WorkspaceDeployment.
	WorkspaceServiceSetBundle = "workspace-serviceset"
)

// SourceBuiltIn is the Source of a bundle embedded in the binary.
const SourceBuiltIn = "built-in"

// bundleNameRE is the pattern of BundleReference.Name.
var bundleNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// Registry holds the bundles known to the manager by name: the built-in
// ones and those of the manager's bundle directory. It is immutable and safe
// for concurrent use.
type Registry struct {
	bundles map[string]*Bundle
	sources []Source
}

// Source describes where one bundle of a Registry comes from.
type Source struct {
	// Name of the bundle.
	Name string
	// Origin is SourceBuiltIn or the bundle's directory.
	Origin string
	// OverridesBuiltIn is true when a directory bundle replaces a built-in
	// bundle of the same name.
	OverridesBuiltIn bool
}

// NewRegistry loads the built-in bundles (templates.FS) and, when dir is not
// empty, every folder of dir as a bundle named after the folder; a folder
// named like a built-in bundle replaces it (Sources reports it). Folders
// whose name starts with "." are skipped. Symbolic links inside a bundle
// folder must stay inside it. Any bundle that fails to load fails the call.
func NewRegistry(dir string) (*Registry, error) {
	r := &Registry{bundles: map[string]*Bundle{}}
	builtins, err := fs.ReadDir(templates.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("reading built-in bundles: %w", err)
	}
	for _, e := range builtins {
		if !e.IsDir() {
			continue
		}
		b, err := LoadFS(e.Name(), templates.FS, e.Name())
		if err != nil {
			return nil, fmt.Errorf("loading built-in bundle: %w", err)
		}
		b.Source = SourceBuiltIn
		r.bundles[b.Name] = b
	}
	if dir != "" {
		if err := r.loadDir(dir); err != nil {
			return nil, err
		}
	}
	for name, b := range r.bundles {
		r.sources = append(r.sources, Source{
			Name:             name,
			Origin:           b.Source,
			OverridesBuiltIn: b.Source != SourceBuiltIn && isBuiltIn(name),
		})
	}
	sort.Slice(r.sources, func(i, j int) bool { return r.sources[i].Name < r.sources[j].Name })
	return r, nil
}

func isBuiltIn(name string) bool {
	info, err := fs.Stat(templates.FS, name)
	return err == nil && info.IsDir()
}

func (r *Registry) loadDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("reading bundle directory %s: %w", dir, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		full := filepath.Join(dir, e.Name())
		info, err := os.Stat(full)
		if err != nil {
			return fmt.Errorf("reading bundle %s: %w", full, err)
		}
		if !info.IsDir() {
			continue
		}
		if len(e.Name()) > 253 || !bundleNameRE.MatchString(e.Name()) {
			return fmt.Errorf("bundle folder %s: the name must be lower-case letters, digits, '-' and '.'", full)
		}
		if err := r.loadOne(e.Name(), full); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) loadOne(name, dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening bundle %s: %w", dir, err)
	}
	defer func() { _ = root.Close() }()
	b, err := LoadFS(name, root.FS(), ".")
	if err != nil {
		return fmt.Errorf("loading bundle from %s: %w", dir, err)
	}
	b.Source = dir
	r.bundles[name] = b
	return nil
}

// Get returns the bundle with that name, or an error wrapping
// ErrBundleNotFound that lists the known names.
func (r *Registry) Get(name string) (*Bundle, error) {
	if b, ok := r.bundles[name]; ok {
		return b, nil
	}
	names := make([]string, 0, len(r.sources))
	for _, s := range r.sources {
		names = append(names, s.Name)
	}
	return nil, fmt.Errorf("%w: %q (known bundles: %s)", ErrBundleNotFound, name, strings.Join(names, ", "))
}

// Sources lists the bundles of the registry, sorted by name.
func (r *Registry) Sources() []Source {
	return append([]Source(nil), r.sources...)
}
