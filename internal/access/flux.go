package access

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/render"
)

// RoutesKustomizationBundle is the built-in bundle that renders the Flux
// Kustomization applying a regional cluster's routes in Git mode.
const RoutesKustomizationBundle = "routes-kustomization"

// RoutesKustomizationName is the name of the Flux Kustomization that
// applies the routes of regional cluster regional, in its namespace: short
// enough for the label values Flux stamps it into.
func RoutesKustomizationName(regional string) string {
	return naming.Bounded("apiary-routes-" + regional)
}

// SourceRef names the Flux source (a GitRepository) the Kustomization reads.
type SourceRef struct {
	Kind, Name, Namespace string
}

// KustomizationInput is what the routes-kustomization bundle renders from.
type KustomizationInput struct {
	// Kustomization is the name and namespace of the Flux Kustomization:
	// the regional ClusterDeployment's namespace, where its kubeconfig
	// Secret is.
	Kustomization types.NamespacedName
	// Regional is the regional ClusterDeployment.
	Regional types.NamespacedName
	// Path is the folder of the repository holding the regional cluster's
	// routes.
	Path string
	// Source is the GitRepository of that repository.
	Source SourceRef
	// KubeconfigSecret and KubeconfigKey name the Secret and key of the
	// regional cluster's kubeconfig.
	KubeconfigSecret, KubeconfigKey string
	// Labels go on the Kustomization.
	Labels map[string]string
	// Operator are the manager's settings, .Input.operator.
	Operator map[string]any
}

// Request is the render request of the routes-kustomization bundle; its
// README documents the input.
func (in KustomizationInput) Request() render.Request {
	labels, operator := inputMaps(in.Labels, in.Operator)
	return render.Request{Purpose: render.PurposeRoutesKustomization, ReleaseName: in.Kustomization.Name, Namespace: in.Kustomization.Namespace, Input: map[string]any{
		"name":             in.Kustomization.Name,
		"namespace":        in.Kustomization.Namespace,
		"regionalCluster":  map[string]any{"name": in.Regional.Name, "namespace": in.Regional.Namespace},
		"path":             in.Path,
		"sourceRef":        map[string]any{"kind": in.Source.Kind, "name": in.Source.Name, "namespace": in.Source.Namespace},
		"kubeConfigSecret": map[string]any{"name": in.KubeconfigSecret, "key": in.KubeconfigKey},
		"labels":           labels,
		"operator":         operator,
	}}
}
