package adopt

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

const v1beta1 = "k0rdent.mirantis.com/v1beta1"

var migration = Migration{From: []string{"manager"}, To: "apiary"}

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: v1beta1, Subresource: subresource,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// owned returns the fields of the entry of manager and operation as a map.
func owned(g Gomega, entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType) map[string]any {
	for _, e := range entries {
		if e.Manager == manager && e.Operation == op && e.Subresource == "" {
			out := map[string]any{}
			g.Expect(json.Unmarshal(e.FieldsV1.Raw, &out)).To(Succeed())
			return out
		}
	}
	return nil
}

func desiredCD() map[string]any {
	return map[string]any{
		"apiVersion": v1beta1, "kind": "ClusterDeployment",
		"metadata": map[string]any{
			"name": "c-a", "namespace": "ns",
			"labels":          map[string]any{"team": "a", "apiary.exalsius.ai/owner-kind": "Colony"},
			"ownerReferences": []any{map[string]any{"uid": "colony-uid", "kind": "Colony", "name": "c"}},
		},
		"spec": map[string]any{"template": "tpl", "config": map[string]any{"region": "eu"}},
	}
}

// operatorFields is what the operator's Create and Update of a
// ClusterDeployment own, with kcm's finalizer and component label written
// under the same manager name.
const operatorFields = `{"f:metadata":{"f:finalizers":{".":{},"v:\"k0rdent.mirantis.com/cluster-deployment\"":{}},` +
	`"f:labels":{".":{},"f:team":{},"f:dropped":{},"f:k0rdent.mirantis.com/component":{}},` +
	`"f:annotations":{".":{},"f:note":{}},` +
	`"f:ownerReferences":{".":{},"k:{\"uid\":\"colony-uid\"}":{}}},` +
	`"f:spec":{".":{},"f:template":{},"f:config":{".":{},"f:region":{},"f:old":{}},"f:ipamClaim":{"f:clusterIPAMClaimRef":{}}}}`

func TestPlanMovesRenderedFieldsAndDroppedLabels(t *testing.T) {
	g := NewWithT(t)
	status := entry("manager", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:phase":{}}}`)
	other := entry("kubectl", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`)
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	res, err := migration.Plan([]metav1.ManagedFieldsEntry{
		entry("manager", metav1.ManagedFieldsOperationUpdate, "", operatorFields), status, other,
	}, desiredCD(), now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Moved).To(BeNumerically(">", 0))

	apiary := owned(g, res.ManagedFields, "apiary", metav1.ManagedFieldsOperationApply)
	g.Expect(apiary).To(Equal(map[string]any{
		"f:metadata": map[string]any{
			"f:labels":          map[string]any{".": map[string]any{}, "f:team": map[string]any{}, "f:dropped": map[string]any{}},
			"f:annotations":     map[string]any{"f:note": map[string]any{}},
			"f:ownerReferences": map[string]any{".": map[string]any{}, `k:{"uid":"colony-uid"}`: map[string]any{}},
		},
		"f:spec": map[string]any{".": map[string]any{}, "f:template": map[string]any{},
			"f:config": map[string]any{".": map[string]any{}, "f:region": map[string]any{}}},
	}), "the rendered fields and the dropped label and annotation")
	left := owned(g, res.ManagedFields, "manager", metav1.ManagedFieldsOperationUpdate)
	g.Expect(left).To(Equal(map[string]any{
		"f:metadata": map[string]any{
			"f:finalizers":  map[string]any{".": map[string]any{}, `v:"k0rdent.mirantis.com/cluster-deployment"`: map[string]any{}},
			"f:labels":      map[string]any{"f:k0rdent.mirantis.com/component": map[string]any{}},
			"f:annotations": map[string]any{}, // the map itself, a leaf now
		},
		"f:spec": map[string]any{"f:config": map[string]any{"f:old": map[string]any{}}, "f:ipamClaim": map[string]any{"f:clusterIPAMClaimRef": map[string]any{}}},
	}), "finalizers, k0rdent's label and spec fields Apiary does not render stay")
	g.Expect(res.ManagedFields).To(ContainElements(status, other), "other managers and subresources are untouched")
	for _, e := range res.ManagedFields {
		if e.Manager == "apiary" {
			g.Expect(e.Time.Time).To(Equal(now))
			g.Expect(e.APIVersion).To(Equal(v1beta1))
		}
	}
}

func TestPlanUnionsIntoAnExistingApplyEntry(t *testing.T) {
	g := NewWithT(t)
	res, err := migration.Plan([]metav1.ManagedFieldsEntry{
		entry("apiary", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:template":{}}}`),
		entry("manager", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`),
	}, desiredCD(), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ManagedFields).To(HaveLen(1), "the emptied Update entry is dropped")
	g.Expect(owned(g, res.ManagedFields, "apiary", metav1.ManagedFieldsOperationApply)).To(Equal(map[string]any{
		"f:metadata": map[string]any{"f:labels": map[string]any{"f:team": map[string]any{}}},
		"f:spec":     map[string]any{"f:template": map[string]any{}},
	}))
}

func TestPlanLeavesOtherWritersAndVersions(t *testing.T) {
	g := NewWithT(t)
	managed := []metav1.ManagedFieldsEntry{
		entry("kcm", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`),
		entry("manager", metav1.ManagedFieldsOperationApply, "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`),
		entry("manager", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{}}`),
	}
	older := entry("manager", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:labels":{"f:team":{}}}}`)
	older.APIVersion = "k0rdent.mirantis.com/v1alpha1"
	managed = append(managed, older)
	res, err := migration.Plan(managed, desiredCD(), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Moved).To(BeZero())
	g.Expect(res.ManagedFields).To(Equal(managed))

	res, err = Migration{To: "apiary"}.Plan(managed, desiredCD(), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Moved).To(BeZero(), "disabled without writers to take over from")
}

func TestInObjectFollowsKeysValuesAndIndexes(t *testing.T) {
	g := NewWithT(t)
	obj := map[string]any{"spec": map[string]any{
		"ports":  []any{map[string]any{"port": int64(80), "protocol": "TCP", "name": "http"}},
		"hosts":  []any{"a", "b"},
		"atomic": []any{"x"},
	}}
	managed := entry("manager", metav1.ManagedFieldsOperationUpdate, "",
		`{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{"f:name":{}},"k:{\"port\":81,\"protocol\":\"TCP\"}":{}},`+
			`"f:hosts":{"v:\"a\"":{},"v:\"c\"":{}},"f:atomic":{}}}`)
	set, err := decode(managed)
	g.Expect(err).NotTo(HaveOccurred())
	var in, out []string
	set.Iterate(func(p fieldpath.Path) {
		if inObject(p, obj) {
			in = append(in, p.String())
		} else {
			out = append(out, p.String())
		}
	})
	g.Expect(in).To(ConsistOf(`.spec.ports[port=80,protocol="TCP"].name`, `.spec.hosts[="a"]`, `.spec.atomic`))
	g.Expect(out).To(ConsistOf(`.spec.ports[port=81,protocol="TCP"]`, `.spec.hosts[="c"]`))
}

func TestProtected(t *testing.T) {
	g := NewWithT(t)
	for key, want := range map[string]bool{
		"k0rdent.mirantis.com/component":         true,
		"ksm.k0rdent.mirantis.com/adapter":       true,
		"cluster.x-k8s.io/cluster-name":          true,
		"app.kubernetes.io/name":                 true,
		"kubernetes.io/metadata.name":            true,
		"projectsveltos.io/cluster":              true,
		"team":                                   false,
		"workspaces.exalsius.ai/workspace":       false,
		"example.com/kubernetes.io":              false,
		"notk0rdent.mirantis.com.evil.org/label": false,
	} {
		g.Expect(Protected(key)).To(Equal(want), key)
	}
}

func TestPatchNeedsAResourceVersion(t *testing.T) {
	g := NewWithT(t)
	_, err := Patch(nil, "")
	g.Expect(err).To(HaveOccurred())
	p, err := Patch([]metav1.ManagedFieldsEntry{entry("apiary", metav1.ManagedFieldsOperationApply, "", `{}`)}, "42")
	g.Expect(err).NotTo(HaveOccurred())
	data, err := p.Data(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring(`{"op":"replace","path":"/metadata/resourceVersion","value":"42"}`))
}

func TestPlanReportsStaleLabelsAndTakesItsOwnUpdateEntry(t *testing.T) {
	g := NewWithT(t)
	m := Migration{From: []string{"manager"}, To: "apiary", Self: true}
	res, err := m.Plan([]metav1.ManagedFieldsEntry{
		entry("manager", metav1.ManagedFieldsOperationUpdate, "", operatorFields),
		entry("apiary", metav1.ManagedFieldsOperationUpdate, "", `{"f:spec":{"f:ipamClaim":{}},"f:metadata":{"f:labels":{"f:k0rdent.mirantis.com/owned":{}}}}`),
	}, desiredCD(), time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	var stale []string
	for _, p := range res.Stale {
		stale = append(stale, p.String())
	}
	g.Expect(stale).To(ConsistOf(".metadata.labels.dropped", ".metadata.annotations.note", ".metadata.labels.k0rdent.mirantis.com/owned"),
		"the operator's labels and annotations the render drops, and all of Apiary's own Update entry")
	g.Expect(owned(g, res.ManagedFields, "apiary", metav1.ManagedFieldsOperationUpdate)).To(BeNil(), "its own Update entry is emptied")
	apply := owned(g, res.ManagedFields, "apiary", metav1.ManagedFieldsOperationApply)
	g.Expect(apply["f:spec"]).To(HaveKey("f:ipamClaim"), "its own fields move whole, even out of the operator's scope")
}

func TestAdoptedMergesDesiredIntoLive(t *testing.T) {
	g := NewWithT(t)
	live := map[string]any{
		"apiVersion": v1beta1, "kind": "ClusterDeployment",
		"metadata": map[string]any{"name": "c-a", "namespace": "ns", "resourceVersion": "7",
			"labels":     map[string]any{"team": "a", "dropped": "yes", "k0rdent.mirantis.com/component": "kcm"},
			"finalizers": []any{"k0rdent.mirantis.com/cluster-deployment"}},
		"spec":   map[string]any{"template": "old", "config": map[string]any{"region": "us", "old": "x"}, "ipamClaim": map[string]any{"ref": "r"}},
		"status": map[string]any{"phase": "Ready"},
	}
	res := Result{Stale: []fieldpath.Path{path("metadata", "labels", "dropped")},
		ManagedFields: []metav1.ManagedFieldsEntry{entry("apiary", metav1.ManagedFieldsOperationApply, "", `{}`)}}
	out, err := Adopted(live, desiredCD(), res)
	g.Expect(err).NotTo(HaveOccurred())
	meta := out["metadata"].(map[string]any)
	g.Expect(meta["labels"]).To(Equal(map[string]any{"team": "a", "apiary.exalsius.ai/owner-kind": "Colony", "k0rdent.mirantis.com/component": "kcm"}))
	g.Expect(meta["resourceVersion"]).To(Equal("7"), "the precondition of the Update")
	g.Expect(meta["finalizers"]).To(Equal([]any{"k0rdent.mirantis.com/cluster-deployment"}))
	g.Expect(meta["ownerReferences"]).To(HaveLen(1))
	g.Expect(meta["managedFields"]).To(HaveLen(1))
	g.Expect(out["spec"]).To(Equal(map[string]any{"template": "tpl", "config": map[string]any{"region": "eu", "old": "x"}, "ipamClaim": map[string]any{"ref": "r"}}),
		"desired fields set, fields it does not render kept (the next apply removes those Apiary owns)")
	g.Expect(live["metadata"].(map[string]any)["labels"]).To(HaveKey("dropped"), "live is not modified")
}
