package shard

import "k8s.io/apimachinery/pkg/types"

// The kinds of holder objects.
const (
	KindColony            = "Colony"
	KindClusterDeployment = "ClusterDeployment"
)

// Unit is one unit of sharded work, named by its holder object: a Colony
// (with all its clusters and their workspaces) or a ClusterDeployment no
// Colony renders (with its workspaces).
type Unit struct {
	// Kind is KindColony or KindClusterDeployment.
	Kind string
	types.NamespacedName
}

// Key is what the desired shard is hashed from: the holder's
// "<namespace>/<name>".
func (u Unit) Key() string { return u.NamespacedName.String() }

// String names the unit in messages and logs.
func (u Unit) String() string { return u.Kind + " " + u.NamespacedName.String() }

// ColonyClusters lists what a Colony of a ClusterDeployment's namespace
// renders: its name and the ClusterDeployment name of each entry.
type ColonyClusters struct {
	Name     string
	Clusters []string
}

// UnitOfCluster is the unit of the ClusterDeployment cd. ownerColony is the
// Colony that Apiary's owner labels or owner reference on the
// ClusterDeployment name ("" when it does not exist or has none); colonies
// are the Colonies of cd's namespace, which decide for a ClusterDeployment
// that a Colony lists but that does not exist yet. A ClusterDeployment
// that no Colony renders is a unit of its own.
func UnitOfCluster(cd types.NamespacedName, ownerColony string, colonies []ColonyClusters) Unit {
	if ownerColony != "" {
		return Unit{Kind: KindColony, NamespacedName: types.NamespacedName{Namespace: cd.Namespace, Name: ownerColony}}
	}
	for _, c := range colonies {
		for _, name := range c.Clusters {
			if name == cd.Name {
				return Unit{Kind: KindColony, NamespacedName: types.NamespacedName{Namespace: cd.Namespace, Name: c.Name}}
			}
		}
	}
	return Unit{Kind: KindClusterDeployment, NamespacedName: cd}
}
