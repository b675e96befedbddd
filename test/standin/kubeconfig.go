package standin

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// CAPI's conventions for a cluster's kubeconfig Secret.
const (
	// ClusterNameLabel is the CAPI label naming the cluster of an object.
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	// KubeconfigSecretType is the type CAPI gives its cluster Secrets.
	KubeconfigSecretType corev1.SecretType = "cluster.x-k8s.io/secret"
)

// KubeconfigSecretName returns the name of a ClusterDeployment's kubeconfig Secret.
func KubeconfigSecretName(cdName string) string {
	return cdName + k0rdentv1beta1.KubeconfigSecretSuffix
}

// kubeconfigOf returns the kubeconfig to publish for a ClusterDeployment.
func (s *StandIn) kubeconfigOf(cd *k0rdentv1beta1.ClusterDeployment) []byte {
	if s.KubeconfigFor != nil {
		return s.KubeconfigFor(cd)
	}
	return s.ChildKubeconfig
}

// writeKubeconfig creates or updates the kubeconfig Secret, or removes it
// when the cluster has no kubeconfig.
func (s *StandIn) writeKubeconfig(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) error {
	kubeconfig := s.kubeconfigOf(cd)
	if len(kubeconfig) == 0 {
		return s.deleteKubeconfig(ctx, cd)
	}
	key := client.ObjectKey{Namespace: cd.Namespace, Name: KubeconfigSecretName(cd.Name)}
	secret := &corev1.Secret{}
	err := s.Client.Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: key.Namespace, Name: key.Name,
				Labels: map[string]string{ClusterNameLabel: cd.Name},
			},
			Type: KubeconfigSecretType,
			Data: map[string][]byte{k0rdentv1beta1.KubeconfigSecretKey: kubeconfig},
		}
		if err := controllerutil.SetControllerReference(cd, secret, s.Client.Scheme()); err != nil {
			return fmt.Errorf("owning Secret %s: %w", key, err)
		}
		if err := s.Client.Create(ctx, secret); err != nil {
			return fmt.Errorf("creating Secret %s: %w", key, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("getting Secret %s: %w", key, err)
	case bytes.Equal(secret.Data[k0rdentv1beta1.KubeconfigSecretKey], kubeconfig):
		return nil
	}
	patch := client.MergeFrom(secret.DeepCopy())
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[k0rdentv1beta1.KubeconfigSecretKey] = kubeconfig
	if err := s.Client.Patch(ctx, secret, patch); err != nil {
		return fmt.Errorf("updating Secret %s: %w", key, err)
	}
	return nil
}

// deleteKubeconfig removes the kubeconfig Secret, if any.
func (s *StandIn) deleteKubeconfig(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) error {
	key := client.ObjectKey{Namespace: cd.Namespace, Name: KubeconfigSecretName(cd.Name)}
	secret := &corev1.Secret{}
	if err := s.Client.Get(ctx, key, secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	if err := s.Client.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting Secret %s: %w", key, err)
	}
	return nil
}

// UnreachableKubeconfig returns a well-formed kubeconfig whose server
// refuses connections, for tests of clusters that cannot be reached.
func UnreachableKubeconfig() []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters:
- name: unreachable
  cluster:
    server: https://127.0.0.1:1
contexts:
- name: unreachable
  context:
    cluster: unreachable
    user: unreachable
current-context: unreachable
users:
- name: unreachable
  user:
    token: unreachable
`)
}
