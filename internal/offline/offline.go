package offline

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/render"
)

// Redacted replaces every Secret value when Options.RedactSecrets is set.
const Redacted = "REDACTED"

// Options configure a rendering.
type Options struct {
	// Files are YAML files, or folders whose *.yaml, *.yml and *.json files
	// are read (not recursively).
	Files []string
	// BundleDir is a folder of bundles that add to or replace the built-in
	// ones, as the manager's --bundle-dir.
	BundleDir string
	// Namespace is given to namespaced inputs without one ("default" when
	// empty), as kubectl does.
	Namespace string
	// DeliveryMode is passed to bundles as .Input.operator.deliveryMode
	// ("direct" when empty).
	DeliveryMode string
	// RedactSecrets replaces the values of every Secret's data and
	// stringData with Redacted.
	RedactSecrets bool
	// Warnings receives warnings (skipped inputs, left-out valuesFrom), one
	// a line; nil discards them.
	Warnings io.Writer
}

// Main runs `apiary render` with command-line arguments and returns an exit
// code: 0 on success, 1 when rendering fails, 2 for bad arguments.
func Main(args []string, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr)
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func run(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("apiary render", flag.ContinueOnError)
	fset.SetOutput(stderr)
	opts := Options{Warnings: stderr}
	var files stringList
	fset.Var(&files, "f", "A YAML file, or a folder of them, holding Colonies, WorkspaceClasses, WorkspaceDeployments, "+
		"and the ConfigMaps and Secrets they reference (repeatable).")
	fset.Var(&files, "filename", "Same as -f.")
	fset.StringVar(&opts.BundleDir, "bundle-dir", "", "A folder of template bundles, one per subfolder, that add to or replace the built-in ones.")
	fset.StringVar(&opts.Namespace, "namespace", "default", "The namespace of inputs that give none.")
	fset.StringVar(&opts.DeliveryMode, "delivery-mode", delivery.ModeDirect, "The delivery mode bundles see (direct or git).")
	fset.BoolVar(&opts.RedactSecrets, "redact-secrets", false, "Replace Secret values with "+Redacted+", for sharing the output.")
	output := fset.String("output", "", "Write the objects to this file instead of stdout.")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "Usage: apiary render -f FILE|FOLDER [-f ...] [flags]")
		fmt.Fprintln(stderr, "Prints, without a cluster, the objects Apiary would apply or commit for the inputs.")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fset.NArg() > 0 || len(files) == 0 {
		fmt.Fprintln(stderr, "apiary render: give the inputs with -f (and no other arguments)")
		fset.Usage()
		return 2
	}
	opts.Files = files
	out, err := Render(opts)
	if err != nil {
		fmt.Fprintf(stderr, "apiary render: %s\n", strings.ReplaceAll(err.Error(), "\n", "\napiary render: "))
		return 1
	}
	if *output == "" {
		if _, err := stdout.Write(out); err != nil {
			fmt.Fprintf(stderr, "apiary render: writing the output: %s\n", err)
			return 1
		}
		return 0
	}
	if err := os.WriteFile(*output, out, 0o600); err != nil {
		fmt.Fprintf(stderr, "apiary render: writing %s: %s\n", *output, err)
		return 1
	}
	return 0
}

// Render reads the inputs and returns the objects Apiary would deliver for
// them as canonical YAML (render.Output.YAML): the same inputs always give
// the same bytes. Every problem found is returned, joined; each names the
// file and, for a schema problem, the object and field.
func Render(opts Options) ([]byte, error) {
	warnOut := opts.Warnings
	if warnOut == nil {
		warnOut = io.Discard
	}
	warn := func(format string, args ...any) { fmt.Fprintf(warnOut, "warning: "+format+"\n", args...) }
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.DeliveryMode == "" {
		opts.DeliveryMode = delivery.ModeDirect
	}
	files, err := expandFiles(opts.Files)
	if err != nil {
		return nil, err
	}
	in, err := load(files, opts.Namespace, warn)
	if err != nil {
		return nil, err
	}
	bundles, err := render.NewRegistry(opts.BundleDir)
	if err != nil {
		return nil, fmt.Errorf("loading bundles: %w", err)
	}
	r := &renderer{
		in:             in,
		bundles:        bundles,
		settings:       map[string]any{"deliveryMode": opts.DeliveryMode},
		warn:           warn,
		colonyServices: map[string]map[string]bool{},
	}
	set := &objectSet{byKey: map[string]int{}}
	var errs []error
	if len(in.colonies) == 0 && len(in.deployments) == 0 {
		return nil, fmt.Errorf("the inputs (%s) hold no Colony and no WorkspaceDeployment: nothing to render", strings.Join(opts.Files, ", "))
	}
	for _, c := range in.colonies {
		objs, err := r.renderColony(c)
		errs = append(errs, err, set.add(c.src, objs))
	}
	for _, d := range in.deployments {
		objs, err := r.renderWorkspace(d)
		errs = append(errs, err, set.add(d.src, objs))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if opts.RedactSecrets {
		for _, o := range set.objects {
			redact(o)
		}
	}
	return (&render.Output{Objects: set.objects}).YAML(), nil
}

// objectSet collects rendered objects; the same object rendered twice
// (a prerequisite shared by workspaces) is kept once, two different objects
// with the same identity are an error.
type objectSet struct {
	objects []*unstructured.Unstructured
	sources []string
	byKey   map[string]int
}

func (s *objectSet) add(src source, objs []*unstructured.Unstructured) error {
	var errs []error
	for _, o := range objs {
		key := strings.Join([]string{o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName()}, "/")
		if i, dup := s.byKey[key]; dup {
			prev := (&render.Output{Objects: s.objects[i : i+1]}).YAML()
			if !bytes.Equal(prev, (&render.Output{Objects: []*unstructured.Unstructured{o}}).YAML()) {
				errs = append(errs, fmt.Errorf("%s: %s %s/%s is also rendered, differently, for %s",
					src, o.GetKind(), o.GetNamespace(), o.GetName(), s.sources[i]))
			}
			continue
		}
		s.byKey[key] = len(s.objects)
		s.objects = append(s.objects, o)
		s.sources = append(s.sources, src.file)
	}
	return errors.Join(errs...)
}

// redact replaces the values of a Secret.
func redact(o *unstructured.Unstructured) {
	if o.GetAPIVersion() != "v1" || o.GetKind() != "Secret" {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := o.Object[field].(map[string]any)
		if !ok {
			continue
		}
		for k := range m {
			m[k] = Redacted
		}
	}
}
