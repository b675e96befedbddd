package canon

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestParseID(t *testing.T) {
	tests := []struct {
		id      string
		want    ObjectID
		wantErr bool
	}{
		{id: "ns_cm__ConfigMap", want: ObjectID{Namespace: "ns", Name: "cm", Kind: "ConfigMap"}},
		{id: "_team-a__Namespace", want: ObjectID{Name: "team-a", Kind: "Namespace"}},
		{id: "kcm_gpu.pool_k0rdent.mirantis.com_ClusterDeployment",
			want: ObjectID{Namespace: "kcm", Name: "gpu.pool", Group: "k0rdent.mirantis.com", Kind: "ClusterDeployment"}},
		{id: "", wantErr: true},
		{id: "ns_cm_ConfigMap", wantErr: true},
		{id: "ns_cm___ConfigMap", wantErr: true},
		{id: "ns__g_Kind", wantErr: true},
		{id: "ns_name_g_", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseID(tt.id)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring(tt.id)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(got.String()).To(Equal(tt.id))
		})
	}
}

func FuzzParseID(f *testing.F) {
	for _, s := range []string{"ns_cm__ConfigMap", "_n__Namespace", "a_b_c_d", "", "____", "a_b_c_d_e", "ns_ü_g_K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			return
		}
		if id.String() != s {
			t.Fatalf("ParseID(%q).String() = %q", s, id.String())
		}
		if id.Name == "" || id.Kind == "" {
			t.Fatalf("ParseID(%q) accepted an empty name or kind", s)
		}
		again, err := ParseID(id.String())
		if err != nil || again != id {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}

func TestNewInventory(t *testing.T) {
	tests := []struct {
		name string
		objs []*unstructured.Unstructured
		want []commonv1.ResourceRef
	}{
		{name: "empty", want: nil},
		{
			name: "sorted by ID with versions",
			objs: []*unstructured.Unstructured{
				obj("k0rdent.mirantis.com/v1beta1", "ClusterDeployment", "kcm", "b"),
				obj("v1", "ConfigMap", "kcm", "a"),
				obj("v1", "Namespace", "", "kcm"),
			},
			want: []commonv1.ResourceRef{
				{ID: "_kcm__Namespace", Version: "v1"},
				{ID: "kcm_a__ConfigMap", Version: "v1"},
				{ID: "kcm_b_k0rdent.mirantis.com_ClusterDeployment", Version: "v1beta1"},
			},
		},
		{
			name: "duplicates collapse, last version wins; nameless objects are skipped",
			objs: []*unstructured.Unstructured{
				obj("example.com/v1", "Thing", "ns", "x"),
				obj("example.com/v2", "Thing", "ns", "x"),
				obj("v1", "ConfigMap", "ns", ""),
				nil,
			},
			want: []commonv1.ResourceRef{{ID: "ns_x_example.com_Thing", Version: "v2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(NewInventory(tt.objs).Entries).To(Equal(tt.want))
		})
	}
}

func TestDiff(t *testing.T) {
	inv := func(ids ...string) *commonv1.ResourceInventory {
		out := &commonv1.ResourceInventory{}
		for _, id := range ids {
			out.Entries = append(out.Entries, commonv1.ResourceRef{ID: id, Version: "v1"})
		}
		return out
	}
	tests := []struct {
		name       string
		prev, next *commonv1.ResourceInventory
		want       []string
	}{
		{name: "nil prev", prev: nil, next: inv("a_b__K"), want: nil},
		{name: "nil next", prev: inv("a_b__K", "a_c__K"), next: nil, want: []string{"a_b__K", "a_c__K"}},
		{name: "same", prev: inv("a_b__K"), next: inv("a_b__K"), want: nil},
		{name: "one left", prev: inv("a_c__K", "a_b__K"), next: inv("a_b__K", "a_d__K"), want: []string{"a_c__K"}},
		{name: "version change is no difference", prev: inv("a_b__K"),
			next: &commonv1.ResourceInventory{Entries: []commonv1.ResourceRef{{ID: "a_b__K", Version: "v2"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []string
			for _, e := range Diff(tt.prev, tt.next) {
				got = append(got, e.ID)
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestUnionInventory(t *testing.T) {
	g := NewWithT(t)
	ref := func(id, v string) commonv1.ResourceRef { return commonv1.ResourceRef{ID: id, Version: v} }
	a := &commonv1.ResourceInventory{Entries: []commonv1.ResourceRef{ref("ns_b_g_K", "v1"), ref("ns_a_g_K", "v1")}}
	b := &commonv1.ResourceInventory{Entries: []commonv1.ResourceRef{ref("ns_a_g_K", "v2"), ref("ns_c_g_K", "v1")}}
	g.Expect(UnionInventory(a, b).Entries).To(Equal([]commonv1.ResourceRef{ref("ns_a_g_K", "v1"), ref("ns_b_g_K", "v1"), ref("ns_c_g_K", "v1")}))
	g.Expect(UnionInventory(nil, nil).Entries).To(BeEmpty())
	g.Expect(UnionInventory(nil, b).Entries).To(Equal([]commonv1.ResourceRef{ref("ns_a_g_K", "v2"), ref("ns_c_g_K", "v1")}))
}
