package workspace

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// TestPauseServiceSet: only the workspace's ServiceSet gets k0rdent's
// pause, on a copy: the renderer's cached objects stay as rendered.
func TestPauseServiceSet(t *testing.T) {
	g := NewWithT(t)
	obj := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nb"},
		Spec: workspacesv1.WorkspaceDeploymentSpec{ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1"}}}
	mk := func(kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetKind(kind)
		u.SetName(name)
		u.SetAnnotations(map[string]string{"keep": "me"})
		return u
	}
	own, other, secret := mk("ServiceSet", serviceSetName(obj)), mk("ServiceSet", "wsd-c1-other"), mk("Secret", serviceSetName(obj))
	in := []*unstructured.Unstructured{secret, own, other}
	out := pauseServiceSet(obj, in)
	g.Expect(out).To(HaveLen(3))
	g.Expect(out[1].GetAnnotations()).To(Equal(map[string]string{"keep": "me", k0rdentv1beta1.ServiceSetPausedAnnotation: "true"}))
	g.Expect(own.GetAnnotations()).NotTo(HaveKey(k0rdentv1beta1.ServiceSetPausedAnnotation), "the input is not changed")
	g.Expect(out[0]).To(BeIdenticalTo(secret))
	g.Expect(out[2]).To(BeIdenticalTo(other))
	g.Expect(in[1]).To(BeIdenticalTo(own))
}

// TestDriftRevertsScale: only a ServiceSet whose Sveltos drift detection
// covers the replicas refuses a stop.
func TestDriftRevertsScale(t *testing.T) {
	obj := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nb"},
		Spec: workspacesv1.WorkspaceDeploymentSpec{ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1"}}}
	ss := func(config map[string]any) []*unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"provider": map[string]any{"name": "ksm-projectsveltos"}}}}
		u.SetKind("ServiceSet")
		u.SetName(serviceSetName(obj))
		if config != nil {
			_ = unstructured.SetNestedMap(u.Object, config, "spec", "provider", "config")
		}
		return []*unstructured.Unstructured{u}
	}
	exclude := func(paths ...any) map[string]any {
		return map[string]any{"syncMode": "ContinuousWithDriftDetection",
			"driftExclusions": []any{map[string]any{"paths": paths, "target": map[string]any{"kind": "Deployment"}}}}
	}
	cases := []struct {
		name    string
		objs    []*unstructured.Unstructured
		refused bool
	}{
		{name: "no provider config (Continuous)", objs: ss(nil)},
		{name: "Continuous", objs: ss(map[string]any{"syncMode": "Continuous"})},
		{name: "drift detection", objs: ss(map[string]any{"syncMode": "ContinuousWithDriftDetection"}), refused: true},
		{name: "drift detection excluding the replicas", objs: ss(exclude("/spec/template", "/spec/replicas"))},
		{name: "drift detection excluding something else", objs: ss(exclude("/spec/template")), refused: true},
		{name: "no ServiceSet of the workspace", objs: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			why := driftRevertsScale(obj, tc.objs)
			NewWithT(t).Expect(why != "").To(Equal(tc.refused), why)
		})
	}
}
