package colony

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/render"
)

// renderedCluster is the outcome of rendering one Colony entry.
type renderedCluster struct {
	entry   infrav1.ColonyCluster
	cdName  string
	objects []*unstructured.Unstructured
	err     error
	// state is what was observed of the entry's ClusterDeployment.
	state infrav1.ColonyClusterStatus
}

// renderedColony is the outcome of rendering every entry of a Colony.
type renderedColony struct {
	clusters []renderedCluster
	failed   []string
	// applyErr is the sink's error, naming the objects it could not apply.
	applyErr error
}

func (rc *renderedColony) objects() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, c := range rc.clusters {
		out = append(out, c.objects...)
	}
	return out
}

// renderClusters renders every entry through its bundle. An entry that fails
// to render is reported and skipped; the others proceed.
func (r *Reconciler) renderClusters(ctx context.Context, obj *infrav1.Colony) *renderedColony {
	out := &renderedColony{}
	for _, entry := range obj.Spec.ColonyClusters {
		// As in the exalsius operator, an entry without a spec creates nothing,
		// unless it names a bundle or values that can build one.
		if entry.ClusterDeploymentSpec == nil && entry.Values == nil && entry.Bundle == nil {
			continue
		}
		rc := renderedCluster{entry: entry, cdName: naming.ClusterDeploymentName(obj.Name, entry.ClusterName)}
		rc.objects, rc.err = r.renderCluster(ctx, obj, entry, rc.cdName)
		if rc.err != nil {
			out.failed = append(out.failed, fmt.Sprintf("cluster %q: %s", entry.ClusterName, rc.err))
		}
		out.clusters = append(out.clusters, rc)
	}
	if len(out.failed) > 0 {
		msg := reconciler.Enumerate(out.failed, "; ", 5)
		conditions.MarkFalse(obj, commonv1.RenderedCondition, commonv1.RenderFailedReason, "%s", msg)
	} else {
		conditions.MarkTrue(obj, commonv1.RenderedCondition, commonv1.SucceededReason, "%d clusters rendered", len(out.clusters))
	}
	return out
}

func (r *Reconciler) renderCluster(ctx context.Context, obj *infrav1.Colony, entry infrav1.ColonyCluster, cdName string) ([]*unstructured.Unstructured, error) {
	bundle, err := r.Bundles.Resolve(ctx, obj.Namespace, entry.Bundle, render.ColonyClusterBundle)
	if err != nil {
		return nil, err
	}
	req, err := render.ColonyClusterRequest(obj, &entry, cdName, r.Settings)
	if err != nil {
		return nil, err
	}
	output, err := bundle.RenderContext(ctx, req)
	if err != nil {
		return nil, err
	}
	render.LabelColonyObjects(output.Objects, obj.Name, entry.ClusterName)
	for _, o := range output.Objects {
		if o.GetNamespace() == obj.Namespace {
			if err := controllerutil.SetControllerReference(obj, o, r.Scheme()); err != nil {
				return nil, fmt.Errorf("owning %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return output.Objects, nil
}
