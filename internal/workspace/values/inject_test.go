package values

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// injection decodes a ResourceInjectionMap from YAML; "" gives nil.
func injection(t testing.TB, doc string) *workspacesv1.ResourceInjectionMap {
	t.Helper()
	if doc == "" {
		return nil
	}
	m := &workspacesv1.ResourceInjectionMap{}
	if err := yaml.UnmarshalStrict([]byte(doc), m); err != nil {
		t.Fatalf("bad test injection map %q: %v", doc, err)
	}
	return m
}

func TestInject(t *testing.T) {
	tests := []struct {
		name            string
		values          string
		resolved        string
		gpu             GPUPlacement
		injection       string
		want            string
		wantOverwritten []Overwrite
		wantErr         string
	}{
		{
			name:     "the standard paths are always set",
			resolved: `{replicas: 2, perReplica: {cpu: 1500m, memory: 4Gi, storage: 20Gi}}`,
			want: `{"_exalsius":{"resources":{"replicas":2,
				"perReplica":{"cpu":"1500m","memory":"4Gi","storage":"20Gi"}}}}`,
		},
		{
			name:     "quantities are written in canonical form",
			resolved: `{replicas: 1, perReplica: {cpu: "0.5", memory: 1024Mi}}`,
			want:     `{"_exalsius":{"resources":{"replicas":1,"perReplica":{"cpu":"500m","memory":"1Gi"}}}}`,
		},
		{
			name:     "user values elsewhere are kept",
			values:   `{image: {tag: "1"}, resources: {gpus: 8}}`,
			resolved: `{replicas: 1}`,
			want:     `{"image":{"tag":"1"},"resources":{"gpus":8},"_exalsius":{"resources":{"replicas":1}}}`,
		},
		{
			name:     "user values under _exalsius are refused, naming the first path",
			values:   `{_exalsius: {scheduling: {nodeSelector: {a: b}}, resources: {perReplica: {gpuCount: 8}}}}`,
			resolved: `{replicas: 1}`,
			wantErr:  "_exalsius.resources.perReplica.gpuCount is set: keys under _exalsius are reserved",
		},
		{
			name:     "a non-map user _exalsius is refused",
			values:   `{_exalsius: "mine"}`,
			resolved: `{replicas: 1}`,
			wantErr:  "_exalsius is set",
		},
		{
			name:     "a null user _exalsius is refused",
			values:   `{_exalsius: null}`,
			resolved: `{replicas: 1}`,
			wantErr:  "_exalsius is set",
		},
		{
			name:     "a bare gpuCount requests nvidia.com/gpu",
			resolved: `{replicas: 1, perReplica: {gpuCount: 2}}`,
			want: `{"_exalsius":{"resources":{"replicas":1,
				"perReplica":{"gpuCount":2,"gpuResourceName":"nvidia.com/gpu"}}}}`,
		},
		{
			name:     "gpuCount 0 without a vendor requests no resource",
			resolved: `{replicas: 1, perReplica: {gpuCount: 0}}`,
			want:     `{"_exalsius":{"resources":{"replicas":1,"perReplica":{"gpuCount":0}}}}`,
		},
		{
			name:     "the resolved vendor names the resource",
			resolved: `{replicas: 1, perReplica: {gpuCount: 1, gpuVendor: AMD}}`,
			want: `{"_exalsius":{"resources":{"replicas":1,
				"perReplica":{"gpuCount":1,"gpuVendor":"AMD","gpuResourceName":"amd.com/gpu"}}}}`,
		},
		{
			name:     "the vendor inferred from the nodes is used when none is resolved",
			resolved: `{replicas: 1, perReplica: {gpuCount: 1}}`,
			gpu:      GPUPlacement{Vendor: "AMD"},
			want: `{"_exalsius":{"resources":{"replicas":1,
				"perReplica":{"gpuCount":1,"gpuVendor":"AMD","gpuResourceName":"amd.com/gpu"}}}}`,
		},
		{
			name:     "the resolved vendor wins over the inferred one; the scanned resource name wins over both",
			resolved: `{replicas: 1, perReplica: {gpuCount: 1, gpuVendor: NVIDIA}}`,
			gpu:      GPUPlacement{Vendor: "AMD", ResourceName: "amd.com/gpu"},
			want: `{"_exalsius":{"resources":{"replicas":1,
				"perReplica":{"gpuCount":1,"gpuVendor":"NVIDIA","gpuResourceName":"amd.com/gpu"}}}}`,
		},
		{
			name:     "the gate's selector is written as the nodeSelector, with gpuType",
			resolved: `{replicas: 1, perReplica: {gpuCount: 8, gpuType: H100}}`,
			gpu: GPUPlacement{ResourceName: "nvidia.com/gpu", Vendor: "NVIDIA",
				NodeSelector: map[string]string{"exalsius.ai/gpu-model": "H100", "zone": "a"}},
			want: `{"_exalsius":{
				"resources":{"replicas":1,"perReplica":{"gpuCount":8,"gpuVendor":"NVIDIA","gpuType":"H100","gpuResourceName":"nvidia.com/gpu"}},
				"scheduling":{"nodeSelector":{"exalsius.ai/gpu-model":"H100","zone":"a"}}}}`,
		},
		{
			name:     "injection into umbrella chart paths",
			values:   `{jupyterhub: {singleuser: {image: {name: jupyter/base}}}}`,
			resolved: `{replicas: 1, perReplica: {cpu: "2", memory: 8Gi, storage: 50Gi}}`,
			injection: `{cpu: [jupyterhub.singleuser.cpu.limit, jupyterhub.singleuser.cpu.guarantee],
				memory: [jupyterhub.singleuser.memory.limit], storage: [jupyterhub.singleuser.storage.capacity]}`,
			want: `{"jupyterhub":{"singleuser":{"image":{"name":"jupyter/base"},
					"cpu":{"limit":"2","guarantee":"2"},"memory":{"limit":"8Gi"},"storage":{"capacity":"50Gi"}}},
				"_exalsius":{"resources":{"replicas":1,"perReplica":{"cpu":"2","memory":"8Gi","storage":"50Gi"}}}}`,
		},
		{
			name:      "injection at bracket keys",
			resolved:  `{replicas: 3, perReplica: {gpuCount: 1, gpuVendor: NVIDIA, gpuType: A100}}`,
			injection: `{gpuCount: ['resources.limits["nvidia.com/gpu"]'], replicas: [replicaCount], gpuType: ['nodeSelector["exalsius.ai/gpu-model"]'], gpuVendor: [gpu.vendor]}`,
			want: `{"resources":{"limits":{"nvidia.com/gpu":1}},"replicaCount":3,
				"nodeSelector":{"exalsius.ai/gpu-model":"A100"},"gpu":{"vendor":"NVIDIA"},
				"_exalsius":{"resources":{"replicas":3,"perReplica":{"gpuCount":1,"gpuVendor":"NVIDIA","gpuType":"A100","gpuResourceName":"nvidia.com/gpu"}}}}`,
		},
		{
			name:      "a different user value at an injection path is overwritten and reported",
			values:    `{replicaCount: 5, jupyterhub: {singleuser: {cpu: {limit: "16", guarantee: "1"}}}}`,
			resolved:  `{replicas: 2, perReplica: {cpu: "4"}}`,
			injection: `{replicas: [replicaCount], cpu: [jupyterhub.singleuser.cpu.limit]}`,
			want: `{"replicaCount":2,"jupyterhub":{"singleuser":{"cpu":{"limit":"4","guarantee":"1"}}},
				"_exalsius":{"resources":{"replicas":2,"perReplica":{"cpu":"4"}}}}`,
			wantOverwritten: []Overwrite{
				{Path: "replicaCount", Field: "replicas"},
				{Path: "jupyterhub.singleuser.cpu.limit", Field: "cpu"},
			},
		},
		{
			name:      "a user scalar where the injection path needs a map is overwritten and reported",
			values:    `{jupyterhub: {singleuser: {cpu: "16"}}}`,
			resolved:  `{replicas: 1, perReplica: {cpu: "4"}}`,
			injection: `{cpu: [jupyterhub.singleuser.cpu.limit]}`,
			want: `{"jupyterhub":{"singleuser":{"cpu":{"limit":"4"}}},
				"_exalsius":{"resources":{"replicas":1,"perReplica":{"cpu":"4"}}}}`,
			wantOverwritten: []Overwrite{{Path: "jupyterhub.singleuser.cpu.limit", Field: "cpu"}},
		},
		{
			name:      "equal values and nulls are not reported",
			values:    `{replicaCount: 2, cpu: "4", gpus: null}`,
			resolved:  `{replicas: 2, perReplica: {cpu: "4", gpuCount: 1}}`,
			injection: `{replicas: [replicaCount], cpu: [cpu], gpuCount: [gpus]}`,
			want: `{"replicaCount":2,"cpu":"4","gpus":1,
				"_exalsius":{"resources":{"replicas":2,"perReplica":{"cpu":"4","gpuCount":1,"gpuResourceName":"nvidia.com/gpu"}}}}`,
		},
		{
			name:            "a type change is reported",
			values:          `{replicaCount: "2"}`,
			resolved:        `{replicas: 2}`,
			injection:       `{replicas: [replicaCount]}`,
			want:            `{"replicaCount":2,"_exalsius":{"resources":{"replicas":2}}}`,
			wantOverwritten: []Overwrite{{Path: "replicaCount", Field: "replicas"}},
		},
		{
			name:      "a class may inject under _exalsius",
			resolved:  `{replicas: 2}`,
			injection: `{replicas: [_exalsius.chart.replicas, _exalsius.resources.replicas]}`,
			want:      `{"_exalsius":{"chart":{"replicas":2},"resources":{"replicas":2}}}`,
		},
		{
			name:      "user values at the injection paths of fields that resolve to nothing are removed and reported",
			values:    `{memory: 1Gi, vendor: null, other: x, gpuType: H100}`,
			resolved:  `{replicas: 1}`,
			injection: `{memory: [memory], gpuType: [gpuType], gpuVendor: [vendor]}`,
			want:      `{"other":"x","_exalsius":{"resources":{"replicas":1}}}`,
			wantOverwritten: []Overwrite{
				{Path: "memory", Field: "memory", Removed: true},
				{Path: "gpuType", Field: "gpuType", Removed: true},
			},
		},
		{
			name:      "a user GPU count at the class's GPU path is removed when the workspace asks for no GPU",
			values:    `{app: {resources: {limits: {"nvidia.com/gpu": 8, cpu: "2"}}}}`,
			resolved:  `{replicas: 1, perReplica: {cpu: "2"}}`,
			injection: `{gpuCount: ['app.resources.limits["nvidia.com/gpu"]']}`,
			want: `{"app":{"resources":{"limits":{"cpu":"2"}}},
				"_exalsius":{"resources":{"replicas":1,"perReplica":{"cpu":"2"}}}}`,
			wantOverwritten: []Overwrite{{Path: `app.resources.limits["nvidia.com/gpu"]`, Field: "gpuCount", Removed: true}},
		},
		{
			name:            "a removal keeps the maps on the way, and a scalar on the way is no value at the path",
			values:          `{a: {b: {c: 1}}, s: "x"}`,
			resolved:        `{replicas: 1}`,
			injection:       `{cpu: [a.b.c], memory: [s.m]}`,
			want:            `{"a":{"b":{}},"s":"x","_exalsius":{"resources":{"replicas":1}}}`,
			wantOverwritten: []Overwrite{{Path: "a.b.c", Field: "cpu", Removed: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			values := obj(t, tt.values)
			if values == nil {
				values = map[string]any{}
			}
			resolved := spec(t, tt.resolved)
			resolvedBefore := js(t, resolved)

			before := js(t, values)
			res, err := Inject(values, *resolved, tt.gpu, injection(t, tt.injection))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err).To(MatchError(ErrReserved))
				g.Expect(js(t, values)).To(Equal(before), "values written despite the error")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(js(t, values)).To(MatchJSON(tt.want))
			if tt.wantOverwritten == nil {
				g.Expect(res.Overwritten).To(BeEmpty())
			} else {
				g.Expect(res.Overwritten).To(Equal(tt.wantOverwritten))
			}
			g.Expect(js(t, resolved)).To(Equal(resolvedBefore), "resolved modified")

			// The injected nodeSelector is the values' own map.
			if sel, ok := LookupPath(values, pathNodeSelector); ok {
				sel.(map[string]any)["zone"] = "changed"
				g.Expect(tt.gpu.NodeSelector["zone"]).NotTo(Equal("changed"))
			}
		})
	}
}

func TestInjectErrors(t *testing.T) {
	g := NewWithT(t)
	resolved := MergeResources(nil, nil)

	_, err := Inject(nil, resolved, GPUPlacement{}, nil)
	g.Expect(err).To(MatchError(ContainSubstring("nil values")))

	values := map[string]any{"a": "kept"}
	_, err = Inject(values, resolved, GPUPlacement{}, injection(t, `{replicas: [ok], cpu: ["a..b"]}`))
	g.Expect(err).To(MatchError(`resourceInjection.cpu path "a..b": empty segment at position 3`))
	g.Expect(values).To(Equal(map[string]any{"a": "kept"}), "values written despite the error")
}

func TestValidateInjection(t *testing.T) {
	tests := []struct {
		name      string
		injection string
		wantErr   string
	}{
		{name: "nil"},
		{name: "empty", injection: `{}`},
		{
			name: "valid paths",
			injection: `{replicas: [replicaCount], cpu: [a.cpu, 'b["c.d"]'], memory: [a.memory],
				gpuCount: ['resources.limits["nvidia.com/gpu"]'], gpuVendor: [v], gpuType: [t], storage: [s]}`,
		},
		{name: "a field's own standard path is a harmless duplicate", injection: `{cpu: [_exalsius.resources.perReplica.cpu]}`},
		{name: "the same key written twice by one field", injection: `{cpu: [a.b, 'a["b"]']}`},
		{name: "a parse error names the field and path", injection: `{memory: [ok, "x[0]"]}`,
			wantErr: `resourceInjection.memory path "x[0]": unquoted bracket content`},
		{name: "a trailing dot", injection: `{gpuType: ["a."]}`, wantErr: `resourceInjection.gpuType path "a.": trailing dot at position 2`},
		{name: "two fields at one path", injection: `{cpu: [res.x], memory: ['res["x"]']}`,
			wantErr: `resourceInjection.memory path "res[\"x\"]" conflicts with resourceInjection.cpu path "res.x"`},
		{name: "a path inside another field's path", injection: `{cpu: [res], memory: [res.memory]}`,
			wantErr: `resourceInjection.memory path "res.memory" conflicts with resourceInjection.cpu path "res"`},
		{name: "a path inside the same field's path", injection: `{cpu: [res.cpu.limit, res.cpu]}`,
			wantErr: `resourceInjection.cpu path "res.cpu" conflicts with resourceInjection.cpu path "res.cpu.limit"`},
		{name: "a path that would replace the standard paths", injection: `{replicas: [_exalsius.resources]}`,
			wantErr: `resourceInjection.replicas path "_exalsius.resources" conflicts with standard path "_exalsius.resources.replicas"`},
		{name: "another field's standard path", injection: `{gpuType: [_exalsius.resources.perReplica.gpuResourceName]}`,
			wantErr: `conflicts with standard path "_exalsius.resources.perReplica.gpuResourceName"`},
		{name: "a path inside a standard path", injection: `{gpuType: [_exalsius.scheduling.nodeSelector.model]}`,
			wantErr: `conflicts with standard path "_exalsius.scheduling.nodeSelector"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := ValidateInjection(injection(t, tt.injection))
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestOverwriteString(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Overwrite{Path: "jupyterhub.singleuser.cpu.limit", Field: "cpu"}.String()).To(Equal(
		"operator overwrote spec.values.jupyterhub.singleuser.cpu.limit (cpu) — use spec.resources.perReplica.cpu instead"))
	g.Expect(Overwrite{Path: "replicaCount", Field: "replicas"}.String()).To(Equal(
		"operator overwrote spec.values.replicaCount (replicas) — use spec.resources.replicas instead"))
	g.Expect(Overwrite{Path: "gpus", Field: "gpuCount", Removed: true}.String()).To(Equal(
		"operator removed spec.values.gpus (gpuCount) — use spec.resources.perReplica.gpuCount instead"))
}
