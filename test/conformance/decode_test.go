package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/apiaryhq/apiary/internal/scheme"
)

// The property: whatever the API server accepts into one of Apiary's kinds
// from its writers (the spec: tenants and administrators; the status is
// written by Apiary alone, through the status subresource, and is checked
// only with APIARY_DECODE_STATUS=1, see docs/security.md for its gaps),
// Apiary's decoder (the manager's scheme, as its cache decodes a list or a
// watch event) decodes. It is checked generically: every string-typed leaf
// of every CRD in config/crd/bases (int-or-string leaves take numbers too)
// gets random and adversarial values inside an otherwise valid object, which
// is created (spec) or written to the status (status) with dryRun=All; every
// object the server accepts must decode.

// fieldLeaf is one string-typed leaf of a CRD schema.
type fieldLeaf struct {
	crd    *apiextensionsv1.CustomResourceDefinition
	path   []string // JSON keys; "[]" is an array's first item, "{}" a map's value
	schema apiextensionsv1.JSONSchemaProps
	status bool
}

func (l fieldLeaf) String() string {
	return l.crd.Spec.Names.Kind + "." + strings.Join(l.path, ".")
}

// adversarial are tried on every leaf: the spellings Go's parsers
// (durations, quantities, RFC 3339 times) and the server's formats disagree on.
var adversarial = []string{
	"banana", "", " ", "-1h", "+1h", "0", "1.5h", ".5h", "5.h", "1h1h", "1us", "1µs", "1ns",
	"9999999999999h", "2562047h47m16.854775807s", "2562048h", "1e3", "1E", "1e", "0x10", "1Ki",
	"1.5Gi", "-1", "99999999999999999999999Ei", "1e9999999999", "1e-9999999999", "9223372036854775808",
	"2026-01-02T03:04:05Z", "2026-01-02t03:04:05z", "2026-01-02T03:04:05", "2026-01-02T03:04:05x5Z",
	"2026-01-02T03:04:05+24:00", "2026-01-02T03:04:05+23:60", "2026-01-02 03:04:05Z", "0000-01-01T00:00:00Z",
	"2026-01-02T03:04:05.1234567891234Z", "null", "a", "a/b", "x in (a,b)", "[", "(?P<", "\x00", "é",
}

// adversarialNumbers are tried on int-or-string leaves as JSON numbers.
var adversarialNumbers = []string{"0", "-1", "1.5", "1e3", "1e20", "9223372036854775807", "9223372036854775808", "1e400", "-0", "0.1"}

var decodeEnv = struct {
	once   sync.Once
	err    error
	leaves []fieldLeaf
	bases  map[string]map[string]any // kind -> valid object
	rest   rest.Interface
	codec  runtime.Decoder
}{}

// setupDecode loads the CRDs and a valid object of each kind, and creates
// that object (its status is the base of the status leaves' writes).
func setupDecode(t testing.TB) {
	decodeEnv.once.Do(func() { decodeEnv.err = loadDecode() })
	if decodeEnv.err != nil {
		t.Fatalf("setting up: %v", decodeEnv.err)
	}
}

func loadDecode() error {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs found: %v", err)
	}
	bases := map[string]string{
		"WorkspaceDeployment": "testdata/exalsius/workspacedeployment.yaml",
		"WorkspaceClass":      "testdata/exalsius/workspaceclass.yaml",
		"Colony":              "testdata/exalsius/colony.yaml",
		"TenantQuota":         "../../examples/quota/tenantquota.yaml",
		// Its fields are top-level, as Kubernetes' PriorityClass's are.
		"WorkspacePriorityClass": "../../examples/priority/workspacepriorityclass.yaml",
	}
	// The top-level fields whose leaves are written; spec and, with
	// APIARY_DECODE_STATUS, status unless a kind's fields are top-level.
	topsOf := map[string][]string{"WorkspacePriorityClass": {"description", "namespaceSelector"}}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	decodeEnv.rest = cs.CoreV1().RESTClient()
	decodeEnv.codec = serializer.NewCodecFactory(scheme.New()).UniversalDeserializer()
	decodeEnv.bases = map[string]map[string]any{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		kind := crd.Spec.Names.Kind
		bf, ok := bases[kind]
		if !ok {
			return fmt.Errorf("no valid %s to start from: add one to the test's bases", kind)
		}
		base, err := readBase(bf)
		if err != nil {
			return err
		}
		decodeEnv.bases[kind] = base
		for _, v := range crd.Spec.Versions {
			if !v.Storage {
				continue
			}
			props := v.Schema.OpenAPIV3Schema.Properties
			tops := []string{"spec"}
			if t, ok := topsOf[kind]; ok {
				tops = t
			} else if os.Getenv("APIARY_DECODE_STATUS") != "" {
				tops = append(tops, "status")
			}
			for _, top := range tops {
				if s, ok := props[top]; ok {
					walkLeaves(crd, s, []string{top}, top == "status", &decodeEnv.leaves)
				}
			}
		}
		if err := createBase(crd, base); err != nil {
			return err
		}
	}
	sort.Slice(decodeEnv.leaves, func(i, j int) bool { return decodeEnv.leaves[i].String() < decodeEnv.leaves[j].String() })
	return nil
}

func readBase(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc := strings.Split(string(raw), "\n---")[0]
	doc = strings.ReplaceAll(doc, "NAMESPACE", "default")
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	obj["metadata"] = map[string]any{"name": "decode-base"}
	return obj, nil
}

func resourcePath(crd *apiextensionsv1.CustomResourceDefinition) string {
	gv := "/apis/" + crd.Spec.Group + "/" + storageVersion(crd)
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		gv += "/namespaces/default"
	}
	return gv + "/" + crd.Spec.Names.Plural
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return crd.Spec.Versions[0].Name
}

// createBase creates the valid object, its status written, so that status
// leaves have an object to be written to.
func createBase(crd *apiextensionsv1.CustomResourceDefinition, base map[string]any) error {
	ctx := context.Background()
	body, _ := json.Marshal(base)
	raw, err := decodeEnv.rest.Post().AbsPath(resourcePath(crd)).Body(body).Do(ctx).Raw()
	if err != nil {
		return fmt.Errorf("creating a valid %s: %w", crd.Spec.Names.Kind, err)
	}
	created := map[string]any{}
	if err := json.Unmarshal(raw, &created); err != nil {
		return err
	}
	base["metadata"] = created["metadata"]
	return nil
}

// tryLeaf writes v at the leaf (dry run) and, when the server accepts the
// object, decodes what the server returned. It reports whether the server
// accepted it and the decode error, if any.
func tryLeaf(t testing.TB, l fieldLeaf, v any) (bool, error) {
	t.Helper()
	if s, ok := v.(string); ok && !localOK(l.schema, s) {
		return false, nil
	}
	base := decodeEnv.bases[l.crd.Spec.Names.Kind]
	obj := withValue(base, l, v)
	ctx := context.Background()
	var req *rest.Request
	if l.status {
		req = decodeEnv.rest.Put().AbsPath(resourcePath(l.crd), "decode-base", "status")
	} else {
		obj["metadata"] = map[string]any{"name": "decode-try"}
		req = decodeEnv.rest.Post().AbsPath(resourcePath(l.crd))
	}
	body, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("%s: marshalling: %v", l, err)
	}
	raw, err := req.Param("dryRun", "All").Body(body).Do(ctx).Raw()
	if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			if os.Getenv("APIARY_DECODE_DEBUG") != "" {
				t.Logf("%s = %#v refused: %v %s", l, v, err, body)
			}
			return false, nil
		}
		t.Fatalf("%s = %v: unexpected error from the API server: %v", l, v, err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := decodeEnv.codec.Decode(raw, nil, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return true, fmt.Errorf("the API server accepted %s = %#v but Apiary cannot decode it: %w", l, v, err)
		}
	case <-time.After(decodeLimit):
		// The decoding goroutine is left behind: the test fails anyway.
		return true, fmt.Errorf("the API server accepted %s = %#v but Apiary's decoder did not return within %s", l, v, decodeLimit)
	}
	return true, nil
}

// decodeLimit is how long one object may take to decode: far more than
// any object needs (microseconds), far less than a decode that never ends
// (resource.ParseQuantity of 1e-9999999999 does not).
const decodeLimit = 2 * time.Second

// numberValue is s as a JSON number, or false when it is not one.
func numberValue(s string) (json.Number, bool) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return "", false
	}
	n, ok := v.(json.Number)
	return n, ok
}

// TestAcceptedObjectsDecode runs every adversarial value on every leaf and
// checks that the fuzz target covers the schemas: most leaves have a value
// the server accepts.
func TestAcceptedObjectsDecode(t *testing.T) {
	setupDecode(t)
	start := time.Now()
	covered, calls := 0, 0
	var failures []string
	var uncovered []string
	for _, l := range decodeEnv.leaves {
		values := []any{minimal(l.schema)}
		for _, a := range adversarial {
			values = append(values, a)
		}
		if l.schema.XIntOrString {
			for _, n := range adversarialNumbers {
				values = append(values, json.Number(n))
			}
		}
		any := false
		for _, v := range values {
			calls++
			ok, err := tryLeaf(t, l, v)
			if err != nil {
				failures = append(failures, err.Error())
				t.Log(err)
			}
			any = any || ok
			if err != nil && strings.Contains(err.Error(), "did not return") {
				break // the decoding goroutine still runs: spare the CPU
			}
		}
		if any {
			covered++
		} else {
			uncovered = append(uncovered, l.String())
		}
	}
	t.Logf("%d string leaves, %d with an accepted value, %d values tried in %s", len(decodeEnv.leaves), covered, calls, time.Since(start).Round(time.Millisecond))
	if len(uncovered) > 0 {
		t.Logf("leaves no value reached (the object around them was refused): %s", strings.Join(uncovered, ", "))
	}
	if covered*10 < len(decodeEnv.leaves)*9 {
		t.Errorf("only %d of %d leaves had a value the server accepted: the generator no longer builds valid objects", covered, len(decodeEnv.leaves))
	}
	for _, f := range failures {
		t.Error(f)
	}
}

// FuzzAcceptedObjectsDecode is the same property on values the fuzzer makes:
// go test ./test/conformance -run '^$' -fuzz FuzzAcceptedObjectsDecode.
func FuzzAcceptedObjectsDecode(f *testing.F) {
	for i, a := range adversarial {
		f.Add(uint16(i), a, false)
	}
	for i, n := range adversarialNumbers {
		f.Add(uint16(i), n, true)
	}
	f.Fuzz(func(t *testing.T, leaf uint16, value string, number bool) {
		setupDecode(t)
		l := decodeEnv.leaves[int(leaf)%len(decodeEnv.leaves)]
		var v any = value
		if number {
			n, ok := numberValue(value)
			if !ok {
				return
			}
			v = n
		}
		if _, err := tryLeaf(t, l, v); err != nil {
			t.Fatal(err)
		}
	})
}
