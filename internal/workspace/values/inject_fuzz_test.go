package values

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// FuzzInject checks the property the gate and the quotas rely on: after
// Inject, the _exalsius subtree and every injection path hold exactly what
// Inject writes into empty values for the same resolved resources and
// placement — no byte of the user's values survives there — or Inject
// refuses the inputs and writes nothing.
func FuzzInject(f *testing.F) {
	f.Add([]byte(`{"jupyterhub":{"singleuser":{"cpu":"1"}}}`), "jupyterhub.singleuser.cpu.limit\nreplicaCount", int32(2), int8(1), uint8(0xff), "A100")
	f.Add([]byte(`{"_exalsius":{"resources":{"perReplica":{"gpuCount":8}}}}`), "", int32(1), int8(-1), uint8(0), "")
	f.Add([]byte(`{"app":{"resources":{"limits":{"nvidia.com/gpu":8}}}}`), "\n\n\n\n"+`app.resources.limits["nvidia.com/gpu"]`, int32(1), int8(-1), uint8(0x01), "")
	f.Add([]byte(`{"_exalsius":1}`), "_exalsius.resources\na", int32(1), int8(0), uint8(1), "")
	f.Add([]byte(`{"a":{"b":"x"},"s":1}`), "a.b\ns.t\na.c\nd\ne\nf\ng", int32(3), int8(2), uint8(0x5a), "H100")
	f.Add([]byte(`{}`), `a["b.c"]`+"\na..b", int32(3), int8(-1), uint8(2), "")
	f.Fuzz(func(t *testing.T, valuesJSON []byte, pathList string, replicas int32, gpuCount int8, set uint8, gpuType string) {
		values, ok := decodeMap(valuesJSON)
		if !ok || values == nil {
			return
		}
		ref, _ := decodeMap(valuesJSON)

		// Line i of pathList goes to field i mod 7, in injectFields order.
		m := &workspacesv1.ResourceInjectionMap{}
		lists := []*[]workspacesv1.InjectionPath{&m.Replicas, &m.CPU, &m.Memory, &m.Storage, &m.GPUCount, &m.GPUVendor, &m.GPUType}
		if pathList != "" {
			for i, line := range strings.Split(pathList, "\n") {
				if line != "" {
					*lists[i%7] = append(*lists[i%7], workspacesv1.InjectionPath(line))
				}
			}
		}
		resolved, placement := fuzzResources(replicas, gpuCount, set, gpuType)

		want := map[string]any{}
		if _, err := Inject(want, resolved, placement, m); err != nil {
			if ValidateInjection(m) == nil {
				t.Fatalf("Inject into empty values failed on a valid injection map: %v", err)
			}
			return
		}
		res, err := Inject(values, resolved, placement, m)
		if err != nil {
			if !reflect.DeepEqual(values, ref) {
				t.Fatalf("Inject failed (%v) but wrote values", err)
			}
			if _, reserved := ReservedPath(ref); !reserved || !errors.Is(err, ErrReserved) {
				t.Fatalf("Inject refused values without a reserved key: %v", err)
			}
			return
		}
		if _, reserved := ReservedPath(ref); reserved {
			t.Fatal("Inject accepted values with a reserved key")
		}

		if got, exp := jsonOf(t, values[ReservedKey]), jsonOf(t, want[ReservedKey]); got != exp {
			t.Fatalf("_exalsius = %s, want exactly %s", got, exp)
		}
		for _, list := range lists {
			for _, p := range *list {
				segs, _ := ParsePath(string(p))
				got, gotOK := LookupPath(values, segs)
				exp, expOK := LookupPath(want, segs)
				if gotOK != expOK || jsonOf(t, got) != jsonOf(t, exp) {
					t.Fatalf("injection path %q holds %s (present %t), want %s (present %t)", p, jsonOf(t, got), gotOK, jsonOf(t, exp), expOK)
				}
			}
		}
		for _, o := range res.Overwritten {
			if !strings.Contains("\n"+pathList+"\n", "\n"+o.Path+"\n") {
				t.Fatalf("reported overwrite at %q, which is no injection path", o.Path)
			}
		}
		if _, err := Marshal(values); err != nil {
			t.Fatalf("Marshal: %v", err)
		}
	})
}

// fuzzResources builds resolved resources and a placement; bit i of set
// resolves field i (replicas, cpu, memory, storage, gpuCount, gpuVendor,
// gpuType), bit 7 adds a gate selector.
func fuzzResources(replicas int32, gpuCount int8, set uint8, gpuType string) (workspacesv1.WorkspaceResourceSpec, GPUPlacement) {
	var r workspacesv1.WorkspaceResourceSpec
	per := &workspacesv1.PerReplicaResources{}
	if set&1 != 0 {
		r.Replicas = &replicas
	}
	if set&2 != 0 {
		per.CPU = q("250m")
	}
	if set&4 != 0 {
		per.Memory = q("1Gi")
	}
	if set&8 != 0 {
		per.Storage = q("10Gi")
	}
	if set&16 != 0 && gpuCount >= 0 {
		per.GPUCount = ptr(int32(gpuCount))
	}
	if set&32 != 0 {
		v := []workspacesv1.GPUVendor{"NVIDIA", "AMD"}[int(uint8(gpuCount))%2]
		per.GPUVendor = &v
	}
	if set&64 != 0 {
		per.GPUType = &gpuType
	}
	r.PerReplica = per
	var p GPUPlacement
	if set&128 != 0 {
		p.NodeSelector = map[string]string{"exalsius.ai/gpu-model": gpuType}
	}
	return r, p
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %v: %v", v, err)
	}
	return string(b)
}
