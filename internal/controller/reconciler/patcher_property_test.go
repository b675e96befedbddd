package reconciler

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// filler fills a workspace with small random values: few elements, some
// nil, times at any nanosecond, quantities that print more than one way.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 2).MaxDepth(6).Funcs(
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.NewTime(time.Unix(1_700_000_000+c.Int63n(1000), c.Int63n(3)*int64(time.Millisecond)*400))
		},
		func(q *resource.Quantity, c randfill.Continue) {
			*q = []resource.Quantity{resource.MustParse("1"), resource.MustParse("1000m"), resource.MustParse("2Gi"),
				resource.MustParse("0")}[c.Intn(4)]
		},
		func(e *runtime.RawExtension, c randfill.Continue) { *e = runtime.RawExtension{} },
		func(j *apiextensionsv1.JSON, c randfill.Continue) {
			j.Raw = []byte([]string{`{"a":1}`, `"x"`, `[1,2]`}[c.Intn(3)])
		},
	)
}

// TestPropertyTheTypedCheckNeverSkipsAWrite: for random workspaces and
// random changes, whenever the typed check (unchanged) lets Patch skip the
// conversion, the conversion would have found nothing to write either; and
// an object changed in nothing is always decided by the typed check, so the
// steady state never pays for the conversion.
func TestPropertyTheTypedCheckNeverSkipsAWrite(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewPCG(1, 2))
	mutations := []func(w *workspacesv1.WorkspaceDeployment, f *randfill.Filler){
		func(w *workspacesv1.WorkspaceDeployment, f *randfill.Filler) {}, // none
		func(w *workspacesv1.WorkspaceDeployment, f *randfill.Filler) { // one status field refilled
			s := reflect.ValueOf(&w.Status).Elem()
			f.Fill(s.Field(rng.IntN(s.NumField())).Addr().Interface())
		},
		func(w *workspacesv1.WorkspaceDeployment, f *randfill.Filler) { // a time moves within its second
			for i := range w.Status.Conditions {
				w.Status.Conditions[i].LastTransitionTime.Time = w.Status.Conditions[i].LastTransitionTime.Add(time.Millisecond)
			}
		},
		func(w *workspacesv1.WorkspaceDeployment, f *randfill.Filler) { // nil and empty lists
			if w.Status.Conditions == nil {
				w.Status.Conditions = []metav1.Condition{}
			} else if len(w.Status.Conditions) == 0 {
				w.Status.Conditions = nil
			}
			if w.Labels == nil {
				w.Labels = map[string]string{}
			}
		},
		func(w *workspacesv1.WorkspaceDeployment, f *randfill.Filler) { // metadata a reconciler writes
			switch rng.IntN(4) {
			case 0:
				f.Fill(&w.Labels)
			case 1:
				f.Fill(&w.Annotations)
			case 2:
				f.Fill(&w.Finalizers)
			default:
				f.Fill(&w.OwnerReferences)
			}
		},
		func(w *workspacesv1.WorkspaceDeployment, f *randfill.Filler) { // what a patch does not write
			f.Fill(&w.Spec)
			w.ResourceVersion = "other"
		},
	}
	skipped, written := 0, 0
	for i := range 3000 {
		f := filler(int64(i))
		read := &workspacesv1.WorkspaceDeployment{}
		f.Fill(&read.ObjectMeta)
		f.Fill(&read.Status)
		read.ManagedFields = nil
		obj := read.DeepCopy()
		m := rng.IntN(len(mutations))
		mutations[m](obj, f)
		observe := rng.IntN(2) == 0
		if rng.IntN(2) == 0 {
			obj.Generation = obj.Status.ObservedGeneration // observing changes nothing
		}

		fast := (&Patcher{before: read.DeepCopy()}).unchanged(obj.DeepCopy(), observe)
		c, err := (&Patcher{before: read.DeepCopy()}).converted(obj.DeepCopy(), observe)
		g.Expect(err).NotTo(HaveOccurred())
		slowUnchanged := !c.statusChanged && !c.metadataChanged
		if fast {
			skipped++
			g.Expect(slowUnchanged).To(BeTrue(), "case %d (mutation %d, observe %v): the typed check skipped a write the patch needs", i, m, observe)
		} else {
			written++
		}
		if m == 0 && (!observe || obj.Generation == read.Status.ObservedGeneration) {
			g.Expect(fast).To(BeTrue(), "case %d: an unchanged object took the conversion path", i)
		}
	}
	t.Logf("typed check: %d skipped, %d went on to the conversion", skipped, written)
	g.Expect(skipped).To(BeNumerically(">", 500))
	g.Expect(written).To(BeNumerically(">", 500))
}
