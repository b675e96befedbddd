package gitrepo

import "strings"

// ClusterScoped is the directory used in place of a namespace for cluster-scoped objects.
const ClusterScoped = "_cluster"

// ObjectPath returns the file of one object relative to Path, following the
// layout <namespace>/<kind>/<name>.yaml with the kind lower-cased and
// ClusterScoped standing in for an empty namespace.
func ObjectPath(namespace, kind, name string) string {
	if namespace == "" {
		namespace = ClusterScoped
	}
	return namespace + "/" + strings.ToLower(kind) + "/" + name + ".yaml"
}
