package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/apiaryhq/apiary/internal/render/engine"
)

// Limits on what a bundle may hold, so that a bad directory or ConfigMap
// cannot exhaust the manager's memory.
const (
	maxBundleFiles = 1000
	maxBundleBytes = 8 << 20
	maxDirDepth    = 16
)

// Bundle is a loaded template bundle, ready to render. It is immutable and
// safe for concurrent use.
type Bundle struct {
	// Name of the bundle, used in errors.
	Name string
	// Source says where the bundle was loaded from: "built-in", a directory,
	// or whatever the loader's caller set.
	Source string

	chart     *chart.Chart
	templates *engine.Templates
	defaults  map[string]any
	schema    *jsonschema.Schema
}

// LoadFS loads the bundle held in folder dir of fsys ("." for its root). A
// "__" in a file path stands for "/" (as in ConfigMap keys), so a ConfigMap
// mounted as a volume is a valid directory bundle; entries whose name starts
// with ".." (the volume's internal links) are skipped. Symbolic links are
// followed as fsys allows: use an os.Root's FS to keep them inside the bundle.
func LoadFS(name string, fsys fs.FS, dir string) (*Bundle, error) {
	files := map[string][]byte{}
	total := 0
	var walk func(dir, prefix string, depth int) error
	walk = func(dir, prefix string, depth int) error {
		if depth > maxDirDepth {
			return fmt.Errorf("%s: folders nested deeper than %d levels", dir, maxDirDepth)
		}
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "..") {
				continue
			}
			p := path.Join(dir, e.Name())
			rel := path.Join(prefix, e.Name())
			isDir := e.IsDir()
			if e.Type()&fs.ModeSymlink != 0 {
				info, err := fs.Stat(fsys, p)
				if err != nil {
					return fmt.Errorf("%s: %w", rel, err)
				}
				isDir = info.IsDir()
			}
			if isDir {
				if err := walk(p, rel, depth+1); err != nil {
					return err
				}
				continue
			}
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			total += len(data)
			if len(files) >= maxBundleFiles || total > maxBundleBytes {
				return fmt.Errorf("more than %d files or %d bytes", maxBundleFiles, maxBundleBytes)
			}
			files[rel] = data
		}
		return nil
	}
	if err := walk(dir, "", 0); err != nil {
		return nil, newError(name, ReasonBundle, "", 0, fmt.Errorf("reading folder %s: %w", dir, err))
	}
	return LoadFiles(name, files)
}

// LoadFiles loads a bundle from its files, keyed by path inside the bundle:
// Chart.yaml, values.yaml, values.schema.json, templates/<file>, and any
// other file the templates read through .Files. In keys, "__" stands for "/"
// because ConfigMap keys cannot hold "/": the data of a ConfigMap with keys
// Chart.yaml, values.yaml and templates__cd.yaml is a valid argument (merge
// data and binaryData). File names may hold only letters, digits, '-', '.',
// '_' and '/'. Subcharts (charts/, Chart.yaml dependencies) and library
// charts are refused, and so are templates that do not parse, that call an
// unknown function or one that reads the cluster or changes at every call
// (lookup, now, rand*, uuidv4, gen* certificates, ...), and template actions
// that call their own template. Errors are *Error.
func LoadFiles(name string, files map[string][]byte) (*Bundle, error) {
	bad := func(file string, err error) error { return newError(name, ReasonBundle, file, 0, err) }
	if len(files) > maxBundleFiles {
		return nil, bad("", fmt.Errorf("more than %d files", maxBundleFiles))
	}
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	total := 0
	seen := map[string]string{}
	var buffered []*loader.BufferedFile
	for _, k := range keys {
		p, err := DecodeConfigMapKey(k)
		if err != nil {
			return nil, bad(k, err)
		}
		if prev, dup := seen[p]; dup {
			return nil, bad(p, fmt.Errorf("given twice, as %q and %q", prev, k))
		}
		seen[p] = k
		switch {
		case strings.HasPrefix(p, "charts/"), p == "requirements.yaml", p == "requirements.lock", p == "Chart.lock":
			return nil, bad(p, errors.New("bundles cannot have subcharts"))
		}
		total += len(files[k])
		if total > maxBundleBytes {
			return nil, bad("", fmt.Errorf("files larger than %d bytes in total", maxBundleBytes))
		}
		buffered = append(buffered, &loader.BufferedFile{Name: p, Data: files[k]})
	}
	if _, ok := seen["Chart.yaml"]; !ok {
		return nil, bad("Chart.yaml", errors.New("missing: every bundle needs a Chart.yaml"))
	}
	b := &Bundle{Name: name, defaults: map[string]any{}}
	if data, ok := files[seen["values.yaml"]]; ok {
		vals, err := parseValuesYAML(data)
		if err != nil {
			return nil, bad("values.yaml", err)
		}
		b.defaults = vals
	}
	if data, ok := files[seen["values.schema.json"]]; ok {
		s, err := compileSchema(data)
		if err != nil {
			return nil, bad("values.schema.json", err)
		}
		b.schema = s
		if err := validateValues(s, b.defaults); err != nil {
			return nil, bad("values.yaml", fmt.Errorf("does not match values.schema.json: %w", err))
		}
	}
	c, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, bad("Chart.yaml", err)
	}
	if len(c.Metadata.Dependencies) > 0 {
		return nil, bad("Chart.yaml", errors.New("bundles cannot have dependencies"))
	}
	if strings.EqualFold(c.Metadata.Type, "library") {
		return nil, bad("Chart.yaml", errors.New("a library chart renders nothing; use type: application"))
	}
	tmpl, err := engine.Compile(c)
	if err != nil {
		return nil, templateError(name, err)
	}
	b.chart, b.templates = c, tmpl
	return b, nil
}

// DecodeConfigMapKey turns a ConfigMap key into a bundle file path: every
// "__" becomes "/" (so "templates___helpers.tpl" is "templates/_helpers.tpl").
// It refuses keys that would give an absolute path, an empty segment, "." or
// "..", or characters a ConfigMap key cannot hold.
func DecodeConfigMapKey(key string) (string, error) {
	if key == "" {
		return "", errors.New("empty file name")
	}
	if len(key) > 253 {
		return "", fmt.Errorf("file name %q longer than 253 characters", key)
	}
	for _, r := range key {
		ok := r == '-' || r == '.' || r == '_' || r == '/' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return "", fmt.Errorf("file name %q: only letters, digits, '-', '.', '_' and '/' are allowed", key)
		}
	}
	p := strings.ReplaceAll(key, "__", "/")
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("file name %q: invalid path %q", key, p)
		}
	}
	return p, nil
}

// EncodeConfigMapKey turns a bundle file path into a ConfigMap key, writing
// "/" as "__". It refuses paths that would not decode back to themselves:
// path segments must not contain "__" nor end with "_".
func EncodeConfigMapKey(p string) (string, error) {
	for _, seg := range strings.Split(p, "/") {
		if strings.Contains(seg, "__") || strings.HasSuffix(seg, "_") {
			return "", fmt.Errorf("path %q: a segment cannot contain \"__\" nor end with \"_\"", p)
		}
	}
	key := strings.ReplaceAll(p, "/", "__")
	if back, err := DecodeConfigMapKey(key); err != nil || back != p {
		return "", fmt.Errorf("path %q cannot be written as a ConfigMap key", p)
	}
	return key, nil
}
