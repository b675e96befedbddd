package plan

import (
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// injectionPaths are the paths the fuzzer draws a class's injection from.
var injectionPaths = []string{
	`app.resources.limits["nvidia.com/gpu"]`, "app.replicas", "app.resources.requests.cpu",
	"app.resources.requests.memory", "storage.size", "gpu.vendor", "gpu.type", "a", "b.c", "sec.gpu",
}

// FuzzResolvedValuesGiveTheChartWhatWasAdmitted is the property of the
// values that reach a chart: for random inline values, random valuesFrom
// Secrets and ConfigMaps (with and without targetPath), random class
// injections (a secret-typed user-facing field among them) and random
// resources, the documents Apiary delivers — the public values and the
// secret values, encoded as they are written and parsed back — merged as
// Sveltos merges them (deep, valuesFrom over values) and as older versions
// did (top-level keys replaced), hold at every injection path exactly what
// injection into empty values writes there, and Admission.Check accepts
// them; and Check refuses the same documents once a secret document sets
// an injection path to anything else.
func FuzzResolvedValuesGiveTheChartWhatWasAdmitted(f *testing.F) {
	f.Add(`{"app":{"image":"x"}}`, `{"app":{"resources":{"limits":{"nvidia.com/gpu":8}}}}`, "", uint16(0x0001), uint8(1), int8(-1), uint8(3))
	f.Add(`{}`, "8", `app.resources.limits.nvidia\.com/gpu`, uint16(0x0001), uint8(1), int8(2), uint8(0x13))
	f.Add(`{"sec":{"gpu":3}}`, `{"app":{"replicas":100,"resources":{"requests":{"cpu":"64","memory":"1Ti"}}}}`+"\n---\n"+`{"app":5}`, "\napp", uint16(0x03fe), uint8(0x0f), int8(1), uint8(0xff))
	f.Add(`{"a":1,"b":{"c":2}}`, `{"a":{"x":1},"b":null}`+"\n---\n"+`a: [1, 2]`, "a\nb.c", uint16(0x0180), uint8(0x03), int8(0), uint8(0x55))
	f.Fuzz(func(t *testing.T, inline, fromDocs, targetPaths string, pathBits uint16, kindBits uint8, gpuCount int8, set uint8) {
		user := map[string]any{}
		if yaml.Unmarshal([]byte(inline), &user) != nil || user == nil {
			return
		}

		if _, reserved := values.ReservedPath(user); reserved {
			return
		}
		// Injection: bit i of pathBits puts injectionPaths[i] on field i mod 7.
		m := &workspacesv1.ResourceInjectionMap{}
		lists := []*[]workspacesv1.InjectionPath{&m.Replicas, &m.CPU, &m.Memory, &m.Storage, &m.GPUCount, &m.GPUVendor, &m.GPUType}
		for i, p := range injectionPaths {
			if pathBits&(1<<i) != 0 {
				*lists[i%7] = append(*lists[i%7], workspacesv1.InjectionPath(p))
			}
		}
		if values.ValidateInjection(m) != nil {
			return
		}
		class := &workspacesv1.WorkspaceClass{}
		class.Name = "c"
		class.Spec.ResourceInjection = m
		class.Spec.UserFacingConfig = []workspacesv1.UserFacingConfigField{{DisplayName: "s", HelmValuePath: "sec", Type: workspacesv1.UserFacingConfigSecret}}
		obj := &workspacesv1.WorkspaceDeployment{}
		obj.Spec.Values = &apiextensionsv1.JSON{Raw: mustJSON(t, user)}
		docs := strings.Split(fromDocs, "\n---\n")
		paths := strings.Split(targetPaths, "\n")
		if len(docs) > 4 {
			docs = docs[:4]
		}
		for i := range docs {
			ref := workspacesv1.ValuesReference{Kind: "ConfigMap", Name: "v" + string(rune('0'+i)), ValuesKey: "k" + string(rune('0'+i))}
			if kindBits&(1<<i) != 0 {
				ref.Kind = "Secret"
			}
			if i < len(paths) {
				ref.TargetPath = paths[i]
			}
			obj.Spec.ValuesFrom = append(obj.Spec.ValuesFrom, ref)
		}
		fetch := func(ref workspacesv1.ValuesReference) ([]byte, bool, error) {
			return []byte(docs[ref.Name[1]-'0']), true, nil
		}
		resolved := fuzzSpec(gpuCount, set)
		placement := Placement(resolved)
		if set&0x80 != 0 {
			placement.NodeSelector = map[string]string{"gpu": "h100"}
		}
		v, err := ResolveValues(class, obj, resolved, placement, fetch)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("not a FieldError: %v", err)
			}
			return
		}
		admission, err := values.NewAdmission(resolved, placement, m)
		if err != nil {
			t.Fatalf("NewAdmission: %v", err)
		}
		want := map[string]any{}
		if _, err := values.Inject(want, resolved, placement, m); err != nil {
			t.Fatalf("Inject into empty values: %v", err)
		}
		// What is delivered, parsed back as Sveltos parses it.
		public := delivered(t, v.Public, values.Marshal)
		sources := []values.Source{{Name: "values", Values: public}}
		if len(v.Secret) > 0 {
			sources = append(sources, values.Source{Name: "secret", Values: delivered(t, v.Secret, values.MarshalSecret)})
		}
		deep, shallow := map[string]any{}, map[string]any{}
		for _, s := range sources {
			deep = values.DeepMerge(deep, s.Values)
			for k, val := range s.Values {
				shallow[k] = val
			}
		}
		for _, p := range append(injectionPaths, "_exalsius.resources.perReplica.gpuCount", "_exalsius.resources.replicas") {
			segs, _ := values.ParsePath(p)
			w, wok := values.LookupPath(want, segs)
			for name, merged := range map[string]map[string]any{"deep": deep, "shallow": shallow} {
				got, ok := values.LookupPath(merged, segs)
				if !injected(m, p) && !strings.HasPrefix(p, "_exalsius") {
					continue
				}
				if wok != (ok && got != nil) || wok && mustString(t, got) != mustString(t, w) {
					t.Fatalf("%s merge: at %s the chart reads %v (present %v), admitted %v (present %v)", name, p, got, ok, w, wok)
				}
			}
		}
		if err := admission.Check(sources); err != nil {
			t.Fatalf("Check refused what ResolveValues delivers: %v", err)
		}
		// A secret document that sets an injection path otherwise is refused.
		for _, fl := range lists {
			for _, p := range *fl {
				segs, _ := values.ParsePath(string(p))
				tampered := map[string]any{}
				values.SetPath(tampered, segs, "tampered")
				bad := append(append([]values.Source{}, sources...), values.Source{Name: "tenant", Values: tampered})
				if err := admission.Check(bad); !errors.Is(err, values.ErrNotAdmitted) {
					t.Fatalf("Check accepted a document setting %s: %v", p, err)
				}
			}
		}
	})
}

// injected reports whether the class injects at p.
func injected(m *workspacesv1.ResourceInjectionMap, p string) bool {
	for _, l := range [][]workspacesv1.InjectionPath{m.Replicas, m.CPU, m.Memory, m.Storage, m.GPUCount, m.GPUVendor, m.GPUType} {
		for _, q := range l {
			if string(q) == p {
				return true
			}
		}
	}
	return false
}

// delivered encodes a tree as Apiary writes it and parses it back.
func delivered(t *testing.T, tree map[string]any, marshal func(map[string]any) (string, error)) map[string]any {
	text, err := marshal(tree)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("decoding what Apiary writes: %v", err)
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustString(t *testing.T, v any) string { return string(mustJSON(t, v)) }

// fuzzSpec is resources with the fields of set's bits.
func fuzzSpec(gpuCount int8, set uint8) workspacesv1.WorkspaceResourceSpec {
	var r workspacesv1.WorkspaceResourceSpec
	per := &workspacesv1.PerReplicaResources{}
	if set&1 != 0 {
		n := int32(3)
		r.Replicas = &n
	}
	if set&2 != 0 {
		q := resource.MustParse("250m")
		per.CPU = &q
	}
	if set&4 != 0 {
		q := resource.MustParse("1Gi")
		per.Memory = &q
	}
	if set&8 != 0 {
		q := resource.MustParse("10Gi")
		per.Storage = &q
	}
	if set&16 != 0 && gpuCount >= 0 {
		n := int32(gpuCount)
		per.GPUCount = &n
	}
	if set&32 != 0 {
		v := workspacesv1.GPUVendor("NVIDIA")
		per.GPUVendor = &v
	}
	if set&64 != 0 {
		s := "H100"
		per.GPUType = &s
	}
	r.PerReplica = per
	return r
}
