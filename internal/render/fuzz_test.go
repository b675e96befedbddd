package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/render/engine/enginetest"
)

func decodeObject(s string) (map[string]any, bool) {
	m := map[string]any{}
	if err := utiljson.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// checkMerged verifies MergeValues' contract on one level and below.
func checkMerged(t *testing.T, path string, defaults, override, got map[string]any) {
	for k, ov := range override {
		gv, present := got[k]
		switch ovm, isMap := ov.(map[string]any); {
		case ov == nil:
			if present {
				t.Fatalf("%s.%s: null did not remove the key", path, k)
			}
		case isMap:
			gm, ok := gv.(map[string]any)
			if !ok {
				t.Fatalf("%s.%s: want a map, got %T", path, k, gv)
			}
			dm, _ := defaults[k].(map[string]any)
			checkMerged(t, path+"."+k, dm, ovm, gm)
		default:
			a, _ := json.Marshal(ov)
			b, _ := json.Marshal(gv)
			if !bytes.Equal(a, b) {
				t.Fatalf("%s.%s: want %s, got %s", path, k, a, b)
			}
		}
	}
	for k, dv := range defaults {
		if _, overridden := override[k]; overridden {
			continue
		}
		a, _ := json.Marshal(dv)
		b, _ := json.Marshal(got[k])
		if !bytes.Equal(a, b) {
			t.Fatalf("%s.%s: default lost: want %s, got %s", path, k, a, b)
		}
	}
}

func FuzzMergeValues(f *testing.F) {
	f.Add(`{"a": 1, "m": {"x": [1, 2], "y": {"z": true}}}`, `{"a": null, "m": {"y": {"z": false, "w": "s"}}, "n": {"k": null}}`)
	f.Add(`{"l": [1]}`, `{"l": {"now": "a map"}}`)
	f.Add(`{}`, `{}`)
	f.Fuzz(func(t *testing.T, defaultsJSON, overrideJSON string) {
		defaults, ok1 := decodeObject(defaultsJSON)
		override, ok2 := decodeObject(overrideJSON)
		if !ok1 || !ok2 {
			return
		}
		before1, _ := json.Marshal(defaults)
		before2, _ := json.Marshal(override)
		got := MergeValues(defaults, override)
		checkMerged(t, "", defaults, override, got)
		after1, _ := json.Marshal(defaults)
		after2, _ := json.Marshal(override)
		if !bytes.Equal(before1, after1) || !bytes.Equal(before2, after2) {
			t.Fatal("MergeValues modified its arguments")
		}
		again, _ := json.Marshal(MergeValues(defaults, override))
		first, _ := json.Marshal(got)
		if !bytes.Equal(first, again) {
			t.Fatal("MergeValues is not deterministic")
		}
	})
}

func FuzzConfigMapKey(f *testing.F) {
	for _, s := range []string{"Chart.yaml", "templates__cd.yaml", "templates___helpers.tpl", "a____b", "..__x", "x__", "_", "templates/cd.yaml"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := DecodeConfigMapKey(s); err == nil {
			if strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
				t.Fatalf("%q decoded to %q", s, p)
			}
			for _, seg := range strings.Split(p, "/") {
				if seg == ".." || seg == "." || seg == "" {
					t.Fatalf("%q decoded to %q", s, p)
				}
			}
		}
		if key, err := EncodeConfigMapKey(s); err == nil {
			if strings.Contains(key, "/") {
				t.Fatalf("%q encoded to %q, which holds a /", s, key)
			}
			back, err := DecodeConfigMapKey(key)
			if err != nil || back != s {
				t.Fatalf("%q encoded to %q, which decodes to %q (%v)", s, key, back, err)
			}
		}
	})
}

// FuzzRenderColonyClusterValues renders the default bundle with arbitrary
// values: it never panics, fails only with an *Error, and when it succeeds
// gives one ClusterDeployment with a config, the same bytes every time.
func FuzzRenderColonyClusterValues(f *testing.F) {
	f.Add(`{"template": "t", "config": {"a": [1, 2.5, "x"]}, "propagateCredentials": false}`)
	f.Add(`{"template": "", "credential": 3}`)
	f.Add(`{"template": "t", "serviceSpec": {"services": []}, "dryRun": true, "config": null}`)
	b := colonyCluster(f)
	colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	f.Fuzz(func(t *testing.T, valuesJSON string) {
		values, ok := decodeObject(valuesJSON)
		if !ok {
			return
		}
		req, err := ColonyClusterRequest(colony, &infrav1.ColonyCluster{ClusterName: "a"}, "c-a", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Values = values
		out, err := b.Render(req)
		if err != nil {
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("not an *Error: %v", err)
			}
			return
		}
		if len(out.Objects) != 1 || out.Objects[0].GetKind() != "ClusterDeployment" {
			t.Fatalf("want one ClusterDeployment, got %s", out.YAML())
		}
		if spec, _ := out.Objects[0].Object["spec"].(map[string]any); spec == nil || spec["config"] == nil {
			t.Fatalf("spec.config missing: %s", out.YAML())
		}
		again, err := b.Render(req)
		if err != nil || !bytes.Equal(again.YAML(), out.YAML()) {
			t.Fatalf("second render differs: %v", err)
		}
	})
}

func BenchmarkRenderColonyCluster(b *testing.B) {
	bundle := colonyCluster(b)
	colony := quickstart(b)
	req, err := ColonyClusterRequest(colony, &colony.Spec.ColonyClusters[0], "quickstart-child-1", map[string]any{"deliveryMode": "direct"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := bundle.Render(req)
		if err != nil {
			b.Fatal(err)
		}
		_ = out.Digest()
	}
}

// FuzzRenderTemplate renders arbitrary template text under small limits: it
// never panics, fails only with an *Error, stops soon after its timeout, and
// every object it returns is one its purpose allows.
func FuzzRenderTemplate(f *testing.F) {
	for _, s := range append([]string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: team-a}\n",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n",
	}, enginetest.RunawayTemplates...) {
		f.Add(s)
	}
	lim := &Limits{Timeout: time.Second, MaxSteps: 20_000, MaxWorkBytes: 4 << 20, MaxOutputBytes: 1 << 20, MaxObjects: 50}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		b, err := loadTestErr(map[string]string{"templates/x.yaml": text, "files/f.txt": "data"})
		if err != nil {
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("loading: not an *Error: %v", err)
			}
			return
		}
		req := Request{Purpose: PurposeWorkspaceRoutes, Namespace: "team-a", Limits: lim,
			Values: map[string]any{"t": text, "n": 3, "l": []any{"a", map[string]any{"b": 1}}}}
		start := time.Now()
		out, err := b.Render(req)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("render took %s", took)
		}
		if err != nil {
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Fatalf("not an *Error: %v", err)
			}
			return
		}
		conf, _ := ConfinementOf(req.Purpose, req.Namespace)
		for _, o := range out.Objects {
			if err := conf.Check(o); err != nil {
				t.Fatalf("returned a refused object: %v", err)
			}
		}
	})
}
