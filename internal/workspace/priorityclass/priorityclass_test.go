package priorityclass

import (
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func class(value int32, sel *metav1.LabelSelector) *workspacesv1.WorkspacePriorityClass {
	return &workspacesv1.WorkspacePriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "pc"}, Value: value, NamespaceSelector: sel}
}

var tenantA = map[string]string{"tenant": "a"}

func TestResolve(t *testing.T) {
	selA := &metav1.LabelSelector{MatchLabels: tenantA}
	cases := []struct {
		name    string
		want    Want
		pc      *workspacesv1.WorkspacePriorityClass
		labels  map[string]string
		outcome Outcome
		value   int32
	}{
		{name: "no priority class", want: Want{}, pc: class(5, nil), outcome: None},
		{name: "missing class", want: Want{Name: "pc"}, outcome: NotFound},
		{name: "class default without selector", want: Want{Name: "pc"}, pc: class(7, nil), outcome: Resolved, value: 7},
		{name: "class default whatever the selector", want: Want{Name: "pc"}, pc: class(7, selA), labels: map[string]string{"tenant": "b"}, outcome: Resolved, value: 7},
		{name: "own choice, selected", want: Want{Name: "pc", Own: true}, pc: class(9, selA), labels: tenantA, outcome: Resolved, value: 9},
		{name: "own choice, not selected", want: Want{Name: "pc", Own: true}, pc: class(9, selA), labels: map[string]string{"tenant": "b"}, outcome: NotAllowed},
		{name: "own choice, no selector", want: Want{Name: "pc", Own: true}, pc: class(9, nil), labels: tenantA, outcome: NotAllowed},
		{name: "own choice, empty selector selects all", want: Want{Name: "pc", Own: true}, pc: class(-3, &metav1.LabelSelector{}), outcome: Resolved, value: -3},
		{name: "own choice, invalid selector", want: Want{Name: "pc", Own: true},
			pc: class(9, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tenant", Operator: "Bogus"}}}), labels: tenantA, outcome: NotAllowed},
		{name: "a value past the bounds is clamped", want: Want{Name: "pc"}, pc: class(2000000000, nil), outcome: Resolved, value: workspacesv1.MaxWorkspacePriority},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			v := Resolve(c.want, c.pc, c.labels)
			g.Expect(v.Outcome).To(Equal(c.outcome), v.Message)
			g.Expect(v.Value).To(Equal(c.value))
		})
	}
}

func TestWanted(t *testing.T) {
	g := NewWithT(t)
	cls := &workspacesv1.WorkspaceClass{Spec: workspacesv1.WorkspaceClassSpec{PriorityClassName: "default"}}
	ws := &workspacesv1.WorkspaceDeployment{}
	g.Expect(Wanted(nil, ws)).To(Equal(Want{}))
	g.Expect(Wanted(cls, ws)).To(Equal(Want{Name: "default"}))
	ws.Spec.PriorityClassName = "mine"
	g.Expect(Wanted(cls, ws)).To(Equal(Want{Name: "mine", Own: true}))
}

// TestPropertyATenantCannotRaiseItsOwnPriority: over random classes,
// selectors and namespaces, a workspace's own choice resolves only where
// the class's selector selects its namespace, so what a tenant writes
// never gives it more than the platform granted it (its class's default
// or a class that selects it); and every value is within the bounds.
func TestPropertyATenantCannotRaiseItsOwnPriority(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys, vals := []string{"tenant", "tier", "team"}, []string{"a", "b", ""}
	randLabels := func() map[string]string {
		out := map[string]string{}
		for _, k := range keys {
			if rng.IntN(2) == 0 {
				out[k] = vals[rng.IntN(len(vals))]
			}
		}
		return out
	}
	randSelector := func() *metav1.LabelSelector {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return &metav1.LabelSelector{MatchLabels: randLabels()}
		case 2:
			return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: keys[rng.IntN(len(keys))], Operator: []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn,
					metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist}[rng.IntN(4)],
				Values: []string{vals[rng.IntN(2)]}}}}
		}
		return &metav1.LabelSelector{}
	}
	for i := range 20000 {
		pc := class(rng.Int32()-rng.Int32(), randSelector())
		ns := randLabels()
		own := rng.IntN(2) == 0
		v := Resolve(Want{Name: "pc", Own: own}, pc, ns)
		selected, _ := Selects(pc.NamespaceSelector, ns)
		if v.Value < workspacesv1.MinWorkspacePriority || v.Value > workspacesv1.MaxWorkspacePriority {
			t.Fatalf("case %d: value %d out of bounds", i, v.Value)
		}
		if own && v.Outcome == Resolved && !selected {
			t.Fatalf("case %d: a workspace's own choice of %+v resolved in a namespace labelled %v", i, pc.NamespaceSelector, ns)
		}
		if (v.Outcome == Resolved) != (!own || selected) {
			t.Fatalf("case %d: outcome %s, own=%v selected=%v", i, v.Outcome, own, selected)
		}
		if v.Outcome != Resolved && v.Value != 0 {
			t.Fatalf("case %d: %s carries value %d", i, v.Outcome, v.Value)
		}
	}
}

// FuzzSelects: whatever selector and labels the API server accepts,
// Selects decides without a panic, and an unset selector selects nothing.
func FuzzSelects(f *testing.F) {
	f.Add("tenant", "In", "a", "tenant", "a", true)
	f.Add("", "Bogus", "", "x", "", false)
	f.Fuzz(func(t *testing.T, key, op, val, lk, lv string, set bool) {
		labels := map[string]string{lk: lv}
		if ok, _ := Selects(nil, labels); ok {
			t.Fatal("an unset selector selected a namespace")
		}
		var sel *metav1.LabelSelector
		if set {
			sel = &metav1.LabelSelector{MatchLabels: map[string]string{key: val}}
		} else {
			sel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOperator(op), Values: []string{val}}}}
		}
		_, _ = Selects(sel, labels)
	})
}
