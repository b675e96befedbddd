package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/naming"
)

// ColonyClusterLabel is set on every object rendered for a Colony entry,
// with the entry's clusterName.
const ColonyClusterLabel = "infra.exalsius.ai/cluster"

// ColonyLabels are the labels of every object rendered for a Colony entry:
// the Colony's name (infrav1.ColonyLabel) and the entry's clusterName
// (ColonyClusterLabel), each made a valid label value.
func ColonyLabels(colony, clusterName string) map[string]string {
	return map[string]string{
		infrav1.ColonyLabel: naming.LabelValue(colony),
		ColonyClusterLabel:  naming.LabelValue(clusterName),
	}
}

// LabelColonyObjects sets ColonyLabels on the objects rendered for a
// Colony entry, over any label of the same key the bundle set. The Colony
// controller and `apiary render` both label with it, so they agree.
func LabelColonyObjects(objs []*unstructured.Unstructured, colony, clusterName string) {
	want := ColonyLabels(colony, clusterName)
	for _, o := range objs {
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range want {
			labels[k] = v
		}
		o.SetLabels(labels)
	}
}
