package standin

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// NewClusterTemplate returns a ClusterTemplate whose status says whether it
// is valid. Create it with CreateWithStatus.
func NewClusterTemplate(ns, name string, valid bool) *k0rdentv1beta1.ClusterTemplate {
	t := &k0rdentv1beta1.ClusterTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: k0rdentv1beta1.ClusterTemplateSpec{Helm: k0rdentv1beta1.HelmSpec{
			ChartRef: &apiextensionsv1.JSON{Raw: fmt.Appendf(nil, `{"kind":"HelmChart","name":%q}`, name)},
		}},
	}
	t.Status.Valid = valid
	if !valid {
		t.Status.ValidationError = "stand-in template marked invalid"
	}
	return t
}

// NewCredential returns a Credential whose status says whether it is ready.
// Create it with CreateWithStatus.
func NewCredential(ns, name string, ready bool) *k0rdentv1beta1.Credential {
	c := &k0rdentv1beta1.Credential{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: k0rdentv1beta1.CredentialSpec{IdentityRef: &corev1.ObjectReference{
			APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: name + "-identity",
		}},
	}
	c.Status.Ready = ready
	s, reason := metav1.ConditionFalse, k0rdentv1beta1.FailedReason
	if ready {
		s, reason = metav1.ConditionTrue, k0rdentv1beta1.SucceededReason
	}
	c.Status.Conditions = []metav1.Condition{{
		Type: k0rdentv1beta1.CredentialReadyCondition, Status: s, Reason: reason,
		Message: "stand-in credential", LastTransitionTime: metav1.Now(),
	}}
	return c
}

// NewClusterDeployment returns a ClusterDeployment of a template and an
// optional credential, with an empty config so that it is no dry run.
func NewClusterDeployment(ns, name, template, credential string) *k0rdentv1beta1.ClusterDeployment {
	return &k0rdentv1beta1.ClusterDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: k0rdentv1beta1.ClusterDeploymentSpec{
			Template:   template,
			Credential: credential,
			Config:     &apiextensionsv1.JSON{Raw: []byte("{}")},
		},
	}
}

// CreateWithStatus creates an object, then writes the status it was given
// through the status subresource (the API server ignores status on create).
// The object is updated with the server's answers.
func CreateWithStatus(ctx context.Context, c client.Client, obj client.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting %s: %w", obj.GetName(), err)
	}
	status, hasStatus := u["status"]
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", kindOf(c, obj), obj.GetNamespace(), obj.GetName(), err)
	}
	if !hasStatus {
		return nil
	}
	created, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting %s: %w", obj.GetName(), err)
	}
	created["status"] = status
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(created, obj); err != nil {
		return fmt.Errorf("restoring the status of %s: %w", obj.GetName(), err)
	}
	if err := c.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("writing status of %s %s/%s: %w", kindOf(c, obj), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func kindOf(c client.Client, obj client.Object) string {
	if gvk, err := c.GroupVersionKindFor(obj); err == nil {
		return gvk.Kind
	}
	return "object"
}

// AddGPUNode creates a Ready Node in a (child) control plane with labels and
// count units of a GPU resource (e.g. nvidia.com/gpu) as capacity and
// allocatable, beside 16 CPUs, 64Gi of memory, 500Gi of ephemeral storage
// and 110 pods. An empty resource or a count of 0 gives a node without GPUs.
func AddGPUNode(ctx context.Context, childClient client.Client, name string, labels map[string]string, resourceName string, count int64) error {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("16"),
		corev1.ResourceMemory:           resource.MustParse("64Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	if resourceName != "" && count > 0 {
		resources[corev1.ResourceName(resourceName)] = *resource.NewQuantity(count, resource.DecimalSI)
	}
	all := map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}
	for k, v := range labels {
		all[k] = v
	}
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "stand-in node is ready", LastHeartbeatTime: now, LastTransitionTime: now,
			}},
		},
	}
	return CreateWithStatus(ctx, childClient, node)
}

// NewServiceTemplate returns a Helm ServiceTemplate whose status says whether
// it is valid, with annotations as test knobs (AnnotationChart,
// AnnotationFail, AnnotationDelay, AnnotationHang). Create it with
// CreateWithStatus.
func NewServiceTemplate(ns, name string, valid bool, annotations map[string]string) *k0rdentv1beta1.ServiceTemplate {
	t := &k0rdentv1beta1.ServiceTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: k0rdentv1beta1.ServiceTemplateSpec{Helm: &k0rdentv1beta1.HelmSpec{
			ChartRef: &apiextensionsv1.JSON{Raw: fmt.Appendf(nil, `{"kind":"HelmChart","name":%q}`, name)},
		}},
	}
	t.Status.Valid = valid
	if !valid {
		t.Status.ValidationError = "stand-in template marked invalid"
	}
	return t
}

// NewHelmServiceTemplate returns a valid ServiceTemplate of a Helm chart at
// a version, in spec.version and in its chartSpec, as k0rdent's catalog
// makes them (cert-manager-1-16 of the chart cert-manager), with stand-in
// annotations (AnnotationChart picks what the stand-in installs). Create it
// with CreateWithStatus.
func NewHelmServiceTemplate(ns, name, chart, version string, annotations map[string]string) *k0rdentv1beta1.ServiceTemplate {
	t := &k0rdentv1beta1.ServiceTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: k0rdentv1beta1.ServiceTemplateSpec{Version: version, Helm: &k0rdentv1beta1.HelmSpec{
			ChartSpec: &apiextensionsv1.JSON{Raw: fmt.Appendf(nil,
				`{"chart":%q,"version":%q,"interval":"10m","sourceRef":{"kind":"HelmRepository","name":"catalog"}}`, chart, version)},
		}},
	}
	t.Status.Valid = true
	return t
}

// NewServiceSet returns a ServiceSet of a ClusterDeployment for the default
// StateManagementProvider (labelled for its adapter) with the services.
func NewServiceSet(ns, name, cluster string, services ...k0rdentv1beta1.ServiceWithValues) *k0rdentv1beta1.ServiceSet {
	return &k0rdentv1beta1.ServiceSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			k0rdentv1beta1.StateManagementProviderAdapterLabel: k0rdentv1beta1.StateManagementProviderAdapterLabelValue,
		}},
		Spec: k0rdentv1beta1.ServiceSetSpec{
			Cluster:  cluster,
			Provider: k0rdentv1beta1.StateManagementProviderConfig{Name: k0rdentv1beta1.DefaultStateManagementProviderName},
			Services: services,
		},
	}
}
