package manager

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/render"
)

// deps are the mechanisms shared by the controllers.
type deps struct {
	bundles  *render.Registry
	sink     delivery.Sink
	children *childcluster.Manager
}

func newDeps(mgr ctrl.Manager, opts Options) (*deps, error) {
	bundles, err := render.NewRegistry(opts.BundleDir)
	if err != nil {
		return nil, fmt.Errorf("loading bundles: %w", err)
	}
	children := childcluster.NewManager(mgr.GetClient(), childcluster.Options{Scheme: mgr.GetScheme()})
	if err := mgr.Add(children); err != nil {
		return nil, fmt.Errorf("adding the child-cluster manager: %w", err)
	}
	return &deps{
		bundles:  bundles,
		sink:     delivery.NewDirect(mgr.GetClient(), mgr.GetAPIReader(), delivery.DirectOptions{Scheme: mgr.GetScheme()}),
		children: children,
	}, nil
}

// settings are the operator settings bundles see as .Input.operator.
func (d *deps) settings(opts Options) map[string]any {
	return map[string]any{"deliveryMode": d.sink.Mode()}
}

// cacheOptions trims what the manager caches: Secrets keep their data only
// when they hold a child cluster's kubeconfig, which Apiary reads on every
// reconcile; other Secrets are cached as metadata.
func cacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Transform: func(in any) (any, error) {
				s, ok := in.(*corev1.Secret)
				if !ok {
					return in, nil
				}
				s.ManagedFields = nil
				if !strings.HasSuffix(s.Name, k0rdentv1beta1.KubeconfigSecretSuffix) {
					s.Data, s.StringData = nil, nil
				}
				return s, nil
			}},
		},
	}
}
