package render

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/naming"
)

func TestLabelColonyObjects(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("c", 80)
	bare, labelled := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	labelled.SetLabels(map[string]string{"app": "x", ColonyClusterLabel: "forged"})
	LabelColonyObjects([]*unstructured.Unstructured{bare, labelled}, "colony", long)
	want := map[string]string{infrav1.ColonyLabel: "colony", ColonyClusterLabel: naming.LabelValue(long)}
	g.Expect(bare.GetLabels()).To(Equal(want))
	g.Expect(labelled.GetLabels()).To(HaveKeyWithValue("app", "x"), "the bundle's own labels stay")
	g.Expect(labelled.GetLabels()).To(HaveKeyWithValue(ColonyClusterLabel, naming.LabelValue(long)), "the entry's label wins")
	g.Expect(ColonyLabels("colony", long)).To(Equal(want))
}
