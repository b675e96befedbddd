package delivery

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// mappingTTL is how long a kind's mapping is remembered. A kind's scope
// cannot change while its CRD exists (spec.scope is immutable); a CRD
// deleted and created again with the other scope is seen within it.
const mappingTTL = 5 * time.Minute

// rememberingMapper answers RESTMapping for one version from what it found
// within mappingTTL, and asks the mapper it wraps otherwise. Every reconcile
// maps each of its objects' kinds to know their scope, and controller-runtime's
// mapper allocates on each call (a priority list of candidate mappings,
// errors for those that do not match): a third of preparing a delivery.
// Errors are not remembered: a kind not installed yet is asked for again.
type rememberingMapper struct {
	meta.RESTMapper
	now func() time.Time

	mu    sync.Mutex
	found map[mappingKey]foundMapping
}

type mappingKey struct {
	kind    schema.GroupKind
	version string
}

type foundMapping struct {
	mapping *meta.RESTMapping
	at      time.Time
}

// remembering wraps mapper; nil stays nil.
func remembering(mapper meta.RESTMapper) meta.RESTMapper {
	if mapper == nil {
		return nil
	}
	if _, ok := mapper.(*rememberingMapper); ok {
		return mapper
	}
	return &rememberingMapper{RESTMapper: mapper, now: time.Now, found: map[mappingKey]foundMapping{}}
}

// RESTMapping is the wrapped mapper's, remembered for one version. The
// mapping returned is a copy: callers may not change what is remembered.
func (m *rememberingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := mappingKey{gk, versions[0]}
	now := m.now()
	m.mu.Lock()
	f, ok := m.found[key]
	m.mu.Unlock()
	if ok && now.Sub(f.at) < mappingTTL {
		c := *f.mapping
		return &c, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	c := *mapping
	m.mu.Lock()
	m.found[key] = foundMapping{mapping: &c, at: now}
	m.mu.Unlock()
	return mapping, nil
}
