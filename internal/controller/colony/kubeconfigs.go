package colony

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/naming"
)

func kubeconfigsSecretName(obj *infrav1.Colony) string { return naming.KubeconfigsSecretName(obj.Name) }

// kubeconfigSecretRef is one value of the aggregated Secret: as in the
// exalsius operator, a JSON reference to the cluster's kubeconfig Secret, not
// the kubeconfig itself.
type kubeconfigSecretRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

// reconcileKubeconfigs keeps the Secret <colony>-kubeconfigs current: one key
// per ready cluster whose kubeconfig Secret exists, written only on change.
func (r *Reconciler) reconcileKubeconfigs(ctx context.Context, obj *infrav1.Colony) error {
	data := map[string][]byte{}
	var missing []string
	for _, c := range obj.Status.Clusters {
		if !c.Ready {
			continue
		}
		name := c.ClusterDeploymentName + k0rdentv1beta1.KubeconfigSecretSuffix
		src := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: name}, src); err != nil {
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("reading Secret %s/%s: %w", obj.Namespace, name, err)
			}
			missing = append(missing, c.ClusterDeploymentName)
			continue
		}
		ref, _ := json.Marshal(kubeconfigSecretRef{APIVersion: "v1", Kind: "Secret", Namespace: obj.Namespace, Name: name})
		data[c.ClusterDeploymentName] = ref
	}
	if err := r.writeKubeconfigsSecret(ctx, obj, data); err != nil {
		conditions.MarkFalse(obj, infrav1.KubeconfigsReadyCondition, infrav1.SecretWriteFailedReason, "%s", err)
		return err
	}
	obj.Status.KubeconfigSecretName = kubeconfigsSecretName(obj)
	if len(missing) > 0 {
		sort.Strings(missing)
		conditions.MarkFalse(obj, infrav1.KubeconfigsReadyCondition, infrav1.KubeconfigMissingReason,
			"kubeconfig Secret not found for ready clusters: %s", reconciler.Enumerate(missing, ", ", 20))
		return nil
	}
	conditions.MarkTrue(obj, infrav1.KubeconfigsReadyCondition, infrav1.KubeconfigsAggregatedReason,
		"Secret %s references %d kubeconfigs", obj.Status.KubeconfigSecretName, len(data))
	return nil
}

func (r *Reconciler) writeKubeconfigsSecret(ctx context.Context, obj *infrav1.Colony, data map[string][]byte) error {
	want := &corev1.Secret{}
	want.Name, want.Namespace = kubeconfigsSecretName(obj), obj.Namespace
	want.Labels = map[string]string{
		infrav1.ColonyLabel:            naming.LabelValue(obj.Name),
		"app.kubernetes.io/managed-by": "apiary",
	}
	want.Annotations = map[string]string{dataDigestAnnotation: secretDataDigest(data)}
	want.Type = corev1.SecretTypeOpaque
	want.Data = data
	if err := controllerutil.SetControllerReference(obj, want, r.Scheme()); err != nil {
		return fmt.Errorf("owning Secret %s: %w", want.Name, err)
	}
	have := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, want, client.FieldOwner(reconciler.FieldOwner)); err != nil {
			return fmt.Errorf("creating Secret %s: %w", want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading Secret %s: %w", want.Name, err)
	}
	// The manager caches this Secret without its data: compare digests.
	if labelsContain(have.Annotations, want.Annotations) && labelsContain(have.Labels, want.Labels) && metaOwned(have, obj) {
		return nil
	}
	have.Data = want.Data
	if have.Labels == nil {
		have.Labels = map[string]string{}
	}
	maps.Copy(have.Labels, want.Labels)
	if have.Annotations == nil {
		have.Annotations = map[string]string{}
	}
	maps.Copy(have.Annotations, want.Annotations)
	if err := controllerutil.SetControllerReference(obj, have, r.Scheme()); err != nil {
		return fmt.Errorf("owning Secret %s: %w", want.Name, err)
	}
	if err := r.Update(ctx, have, client.FieldOwner(reconciler.FieldOwner)); err != nil {
		return fmt.Errorf("updating Secret %s: %w", want.Name, err)
	}
	return nil
}

// dataDigestAnnotation holds a digest of the data Apiary wrote into a Secret.
const dataDigestAnnotation = "apiary.exalsius.ai/data-digest"

// secretDataDigest is a SHA-256 over the sorted keys and values of data.
func secretDataDigest(data map[string][]byte) string {
	keys := slices.Sorted(maps.Keys(data))
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(data[k]))
		h.Write(data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func labelsContain(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func metaOwned(o client.Object, owner client.Object) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == owner.GetUID() && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}
