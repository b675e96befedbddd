package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/testenv"
)

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// k0rdentObjects builds one object of each k0rdent kind Apiary touches, with
// every field Apiary sets, from Apiary's own Go types.
func k0rdentObjects(ns string) []client.Object {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return []client.Object{
		&k0rdentv1beta1.ClusterTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "remote-cluster-0-1-5", Namespace: ns},
			Spec: k0rdentv1beta1.ClusterTemplateSpec{
				Helm:              k0rdentv1beta1.HelmSpec{ChartSpec: rawJSON(`{"chart":"remote-cluster","version":"0.1.5","interval":"10m","sourceRef":{"kind":"HelmRepository","name":"kcm-templates"}}`)},
				Providers:         []string{"infrastructure-k0sproject-k0smotron"},
				ProviderContracts: map[string]string{"infrastructure-k0sproject-k0smotron": "v1beta1"},
				KubernetesVersion: "v1.33.8",
			},
		},
		&k0rdentv1beta1.ServiceTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: "jupyter-notebook-0-3-0", Namespace: ns},
			Spec: k0rdentv1beta1.ServiceTemplateSpec{
				Helm:    &k0rdentv1beta1.HelmSpec{ChartSpec: rawJSON(`{"chart":"jupyter-notebook","version":"0.3.0","interval":"10m","sourceRef":{"kind":"HelmRepository","name":"exalsius-workspaces"}}`)},
				Version: "0.3.0",
			},
		},
		&k0rdentv1beta1.Credential{
			ObjectMeta: metav1.ObjectMeta{Name: "remote-cred", Namespace: ns},
			Spec: k0rdentv1beta1.CredentialSpec{
				IdentityRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Name: "remote-ssh-key", Namespace: ns},
				Description: "SSH key of the workers",
			},
		},
		&k0rdentv1beta1.StateManagementProvider{
			ObjectMeta: metav1.ObjectMeta{Name: "apiary-conformance-" + ns},
			Spec: k0rdentv1beta1.StateManagementProviderSpec{
				Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{k0rdentv1beta1.StateManagementProviderAdapterLabel: k0rdentv1beta1.StateManagementProviderAdapterLabelValue}},
				Provisioner:     []k0rdentv1beta1.ResourceReference{},
				ProvisionerCRDs: []k0rdentv1beta1.ProvisionerCRD{},
			},
		},
		&k0rdentv1beta1.ClusterDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "quickstart-child-1", Namespace: ns, Labels: map[string]string{"infra.exalsius.ai/colony": "quickstart"}},
			Spec: k0rdentv1beta1.ClusterDeploymentSpec{
				Template:             "remote-cluster-0-1-5",
				Credential:           "remote-cred",
				Config:               rawJSON(`{"controlPlaneNumber":1,"k0smotron":{"service":{"type":"NodePort","apiPort":30443}}}`),
				PropagateCredentials: ptr.To(false),
				ServiceSpec: k0rdentv1beta1.ServiceSpec{
					Provider: k0rdentv1beta1.StateManagementProviderConfig{Name: k0rdentv1beta1.DefaultStateManagementProviderName},
					Services: []k0rdentv1beta1.Service{{
						Name: "cert-manager", Namespace: "cert-manager", Template: "cert-manager-1-16-2",
						Values:      "crds:\n  enabled: true\n",
						ValuesFrom:  []k0rdentv1beta1.ValuesFrom{{Kind: "Secret", Name: "cert-manager-values"}},
						HelmOptions: &k0rdentv1beta1.ServiceHelmOptions{Wait: ptr.To(true), Timeout: &metav1.Duration{Duration: 15 * time.Minute}},
					}},
				},
			},
			Status: k0rdentv1beta1.ClusterDeploymentStatus{
				ObservedGeneration: 1,
				KubernetesVersion:  "v1.33.8",
				Conditions: []metav1.Condition{
					{Type: k0rdentv1beta1.ReadyCondition, Status: metav1.ConditionTrue, Reason: k0rdentv1beta1.SucceededReason, Message: "Object is ready", LastTransitionTime: now},
					{Type: k0rdentv1beta1.CAPIClusterSummaryCondition, Status: metav1.ConditionTrue, Reason: "InfoReported", LastTransitionTime: now},
				},
				Services: []k0rdentv1beta1.ServiceState{{
					Type: "Helm", Name: "cert-manager", Namespace: "cert-manager", Template: "cert-manager-1-16-2",
					State: "Deployed", LastStateTransitionTime: &now,
				}},
			},
		},
		&k0rdentv1beta1.ServiceSet{
			ObjectMeta: metav1.ObjectMeta{Name: "wsd-quickstart-child-1-my-notebook", Namespace: ns,
				Labels: map[string]string{k0rdentv1beta1.StateManagementProviderAdapterLabel: k0rdentv1beta1.StateManagementProviderAdapterLabelValue}},
			Spec: k0rdentv1beta1.ServiceSetSpec{
				Cluster:  "quickstart-child-1",
				Provider: k0rdentv1beta1.StateManagementProviderConfig{Name: k0rdentv1beta1.DefaultStateManagementProviderName, Config: rawJSON(`{"priority":100,"syncMode":"Continuous"}`)},
				Services: []k0rdentv1beta1.ServiceWithValues{{
					Name: "wsd-quickstart-child-1-my-notebook", Namespace: "ws-my-notebook", Template: "jupyter-notebook-0-3-0",
					Version:     ptr.To("0.3.0"),
					Values:      `{"_exalsius":{"resources":{"replicas":1}}}`,
					ValuesFrom:  []k0rdentv1beta1.ValuesFrom{{Kind: "Secret", Name: "wsd-my-notebook-values"}},
					HelmOptions: &k0rdentv1beta1.ServiceHelmOptions{Wait: ptr.To(true), Timeout: &metav1.Duration{Duration: 15 * time.Minute}},
				}},
			},
			Status: k0rdentv1beta1.ServiceSetStatus{
				Cluster:  &corev1.ObjectReference{APIVersion: "k0rdent.mirantis.com/v1beta1", Kind: "ClusterDeployment", Name: "quickstart-child-1", Namespace: ns},
				Deployed: true,
				Provider: k0rdentv1beta1.ProviderState{Ready: true},
				Services: []k0rdentv1beta1.ServiceState{{
					Type: "Helm", Name: "wsd-quickstart-child-1-my-notebook", Namespace: "ws-my-notebook", Template: "jupyter-notebook-0-3-0",
					State: "Deployed", LastStateTransitionTime: &now,
				}},
			},
		},
	}
}

// TestK0rdentTypesAgainstCRDs creates objects built from Apiary's k0rdent types
// on API servers holding Apiary's generated test CRDs and k0rdent's real CRDs
// (v1.8.0 and v1.9.0, from ../shared when present), and checks that nothing
// Apiary sends is refused or lost, and that nothing the server holds is lost
// when read back through Apiary's types.
func TestK0rdentTypesAgainstCRDs(t *testing.T) {
	t.Run("generated", func(t *testing.T) { checkK0rdentRoundTrip(t, env) })
	for _, version := range []string{"v1.8.0", "v1.9.0"} {
		t.Run("k0rdent-"+version, func(t *testing.T) {
			dir, ok := testenv.SharedK0rdentCRDDir(version)
			if !ok {
				t.Skipf("k0rdent's real CRDs are not available (looked in %s); only the generated CRDs were checked", dir)
			}
			real, err := testenv.Start(testenv.WithoutK0rdentCRDs(), testenv.WithCRDDirs(dir))
			if err != nil {
				t.Fatalf("starting control plane with k0rdent %s CRDs: %v", version, err)
			}
			defer func() { _ = real.Stop() }()
			checkK0rdentRoundTrip(t, real)
		})
	}
}

func checkK0rdentRoundTrip(t *testing.T, e *testenv.Environment) {
	ctx := context.Background()
	ns := e.NewNamespace(t, "k0rdent")
	for _, obj := range k0rdentObjects(ns) {
		kind := reflect.TypeOf(obj).Elem().Name()
		t.Run(kind, func(t *testing.T) {
			g := NewWithT(t)
			sent := obj.DeepCopyObject().(client.Object)
			err := e.Client.Create(ctx, obj)
			if meta.IsNoMatchError(err) && e != env {
				t.Skipf("this k0rdent release's CRD set here does not include %s", kind)
			}
			g.Expect(err).NotTo(HaveOccurred(), "the CRD refused a %s built from Apiary's types", kind)
			t.Cleanup(func() { _ = e.Client.Delete(ctx, obj) })
			if status := jsonField(t, sent, "status"); len(status) > 0 {
				setStatus(t, obj, sent)
				g.Expect(e.Client.Status().Update(ctx, obj)).To(Succeed(), "the CRD refused the status of a %s", kind)
			}

			// Everything Apiary sent is kept (the server may add defaults).
			got := obj.DeepCopyObject().(client.Object)
			g.Expect(e.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
			for _, part := range []string{"spec", "status"} {
				g.Expect(subsetDiff(jsonField(t, sent, part), jsonField(t, got, part), part, false)).To(BeEmpty(),
					"fields Apiary sent were refused, pruned or changed")
			}

			// Everything the server holds survives a read through Apiary's types.
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(k0rdentv1beta1.GroupVersion.WithKind(kind))
			g.Expect(e.Client.Get(ctx, client.ObjectKeyFromObject(obj), u)).To(Succeed())
			typed := obj.DeepCopyObject().(client.Object)
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed)).To(Succeed())
			for _, part := range []string{"spec", "status"} {
				server := jsonField(t, u.Object, part)
				g.Expect(subsetDiff(server, jsonField(t, typed, part), part, true)).To(BeEmpty(),
					"fields held by the server are lost by Apiary's types")
			}
		})
	}
}

// setStatus copies the status of src into dst, keeping dst's metadata.
func setStatus(t *testing.T, dst, src client.Object) {
	t.Helper()
	v := reflect.ValueOf(dst).Elem().FieldByName("Status")
	v.Set(reflect.ValueOf(src).Elem().FieldByName("Status"))
}

func jsonField(t *testing.T, obj any, field string) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	out, _ := m[field].(map[string]any)
	return out
}

// subsetDiff lists the paths where want holds a value that got lacks or
// differs on. With zeroOK, a zero value in want (false, 0, "", empty) may be
// missing from got: Go's omitempty drops them, as kcm's own types do.
func subsetDiff(want, got any, path string, zeroOK bool) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			if zeroOK && len(w) == 0 && got == nil {
				return nil
			}
			return []string{fmt.Sprintf("%s: want an object, got %v", path, got)}
		}
		var out []string
		for k, v := range w {
			gv, present := g[k]
			if !present {
				if zeroOK && isZero(v) {
					continue
				}
				out = append(out, path+"."+k+": missing")
				continue
			}
			out = append(out, subsetDiff(v, gv, path+"."+k, zeroOK)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			if zeroOK && len(w) == 0 && got == nil {
				return nil
			}
			return []string{fmt.Sprintf("%s: want %d items, got %v", path, len(w), got)}
		}
		var out []string
		for i := range w {
			out = append(out, subsetDiff(w[i], g[i], fmt.Sprintf("%s[%d]", path, i), zeroOK)...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		return nil
	}
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case int64:
		return x == 0
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}
