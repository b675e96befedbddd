package manager

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/flux"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
)

// routesPath is the folder of the workspaces' routes, checked not to
// overlap the folder Flux applies to the management cluster.
func routesPath(o GitOptions) (string, error) {
	main := path.Clean(defaultString(o.Path, "apiary"))
	routes := path.Clean(defaultString(o.RoutesPath, main+"-routes"))
	within := func(a, b string) bool { return a == b || strings.HasPrefix(a, b+"/") || b == "." }
	if within(routes, main) || within(main, routes) {
		return "", fmt.Errorf("the routes folder %q must not overlap the folder %q Flux applies to the management cluster", routes, main)
	}
	return routes, nil
}

// newRouteSinks builds the route sinks of Git mode: one Git sink per
// regional cluster on a clone of its own, in the installation's repository
// with its credentials and commit settings, reading and mapping the
// regional cluster through its current client; and the Flux Kustomizations
// that apply them, committed through main.
func (d *deps) newRouteSinks(ctx context.Context, mgr ctrl.Manager, o GitOptions, main *delivery.Git, settings map[string]any) (*routesink.Git, error) {
	folder, err := routesPath(o)
	if err != nil {
		return nil, err
	}
	s := &routesink.Git{Main: main, Reader: mgr.GetClient(), Bundles: d.bundles, Path: folder, Settings: settings,
		Alive: routesink.WorkspaceExists(mgr.GetClient())}
	s.Source, s.SourceErr = fluxSource(ctx, mgr, o)
	s.NewSink = func(ctx context.Context, regional types.NamespacedName, folder string, ks types.NamespacedName) (*delivery.Git, error) {
		ro := o
		ro.Path = folder
		ro.KustomizationRef = &ks
		if ro.CheckoutDir != "" {
			ro.CheckoutDir = filepath.Join(ro.CheckoutDir, "routes", regional.Namespace, regional.Name)
		}
		return d.newGitSink(ctx, mgr, ro, func(opts *delivery.GitOptions) {
			current := d.children.Current(regional)
			opts.Mapper, opts.Reader = current, current
			// The routes are applied to the regional cluster, whose kinds
			// the management cluster does not serve: sizes only.
			opts.Validator = nil
			opts.Logger = mgr.GetLogger().WithName("git-routes").WithValues("regionalCluster", regional.String())
		})
	}
	return s, nil
}

// fluxSource is the Flux source the routes' Kustomizations read: the
// GitRepository Apiary reuses, else the source of the Kustomization that
// applies Apiary's folder.
func fluxSource(ctx context.Context, mgr ctrl.Manager, o GitOptions) (access.SourceRef, error) {
	if r := o.GitRepositoryRef; r != nil {
		return access.SourceRef{Kind: gitRepositoryKind.Kind, Name: r.Name, Namespace: r.Namespace}, nil
	}
	if o.KustomizationRef == nil {
		return access.SourceRef{}, errors.New("neither --git-repository nor --git-kustomization is set")
	}
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(flux.KustomizationGVK)
	if err := mgr.GetAPIReader().Get(ctx, *o.KustomizationRef, ks); err != nil {
		return access.SourceRef{}, fmt.Errorf("reading Flux Kustomization %s for its source: %w", o.KustomizationRef, err)
	}
	ref := access.SourceRef{Namespace: o.KustomizationRef.Namespace}
	ref.Kind, _, _ = unstructured.NestedString(ks.Object, "spec", "sourceRef", "kind")
	ref.Name, _, _ = unstructured.NestedString(ks.Object, "spec", "sourceRef", "name")
	if ns, _, _ := unstructured.NestedString(ks.Object, "spec", "sourceRef", "namespace"); ns != "" {
		ref.Namespace = ns
	}
	if ref.Kind != gitRepositoryKind.Kind || ref.Name == "" {
		return access.SourceRef{}, fmt.Errorf("Flux Kustomization %s does not read a GitRepository", o.KustomizationRef)
	}
	return ref, nil
}
