package shard

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/internal/delivery"
)

// UnitAnnotation is set, with sharding, on every file a Git sink commits
// for an owner of a unit, to the unit's Ref: a shard tells its files from
// another's by it, also once the owner is gone.
const UnitAnnotation = delivery.AnnotationShardUnit

// Ref is the unit as UnitAnnotation records it: "<Kind>/<namespace>/<name>".
// The empty Unit (no sharding) has the empty Ref.
func (u Unit) Ref() string {
	if u.Kind == "" {
		return ""
	}
	return u.Kind + "/" + u.Namespace + "/" + u.Name
}

// ParseRef reads a Ref; false when it names no unit.
func ParseRef(ref string) (Unit, bool) {
	parts := strings.Split(ref, "/")
	if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
		return Unit{}, false
	}
	if parts[0] != KindColony && parts[0] != KindClusterDeployment {
		return Unit{}, false
	}
	return Unit{Kind: parts[0], NamespacedName: types.NamespacedName{Namespace: parts[1], Name: parts[2]}}, true
}

// MayRemove decides whether this process may remove, on its own judgement
// (a sweep of files whose owner its cache does not show), a committed file
// whose UnitAnnotation is fileUnit: always without sharding; with sharding
// only when the file names a unit and holds says this process holds that
// unit. Another shard's file, or one that names no unit (written before
// sharding), is never removed by a sweep: the cache of a shard need not
// show another shard's owners, and only the holder of a unit writes its
// files, so only it can tell a file that is left over from one that is
// being written.
func MayRemove(c Config, fileUnit string, holds func(Unit) bool) bool {
	if !c.Enabled() {
		return true
	}
	u, ok := ParseRef(fileUnit)
	return ok && holds != nil && holds(u)
}
