package shard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/ownwrites"
)

// FieldOwner is the field manager of claims and releases.
const FieldOwner = "apiary-shard"

// Retry is how soon a unit is looked at again while it drains or after a
// claim lost a race; WaitRetry bounds the wait for another shard.
const (
	Retry     = time.Second
	WaitRetry = 30 * time.Second
)

// Gate applies Decide in one process: it reads the holder objects and the
// shards' Leases from the manager's cache, writes claims and releases, and
// counts the reconciles in flight per unit so that a unit is released only
// once none runs. A nil Gate, or one whose Config is not Enabled, lets
// every reconcile act. Safe for concurrent use.
type Gate struct {
	Config Config
	// Client writes claims and releases.
	Client client.Client
	// Reader reads Colonies, ClusterDeployments and Leases, from the cache.
	Reader client.Reader
	// LeaseNamespace holds the shards' Leases.
	LeaseNamespace string
	// OnRelease runs once this process released a unit (to stop its
	// child caches).
	OnRelease func(context.Context, Unit)
	// Settled, when set, must report true before this process releases a
	// unit it drained: in Git mode, its sinks hold no change of the unit
	// that is not pushed yet, so that the next holder finds on the branch
	// all that this one wrote.
	Settled func(context.Context, Unit) bool
	// OnAcquire, when set, runs before this process first acts on a unit
	// (after claiming it, taking it over, or finding it its own at start),
	// with the time the decision began; an error defers acting. In Git
	// mode it reloads the sinks' files from the branch, which the previous
	// holder may have changed since this process last read them.
	OnAcquire func(ctx context.Context, u Unit, since time.Time) error

	now   func() time.Time
	mu    sync.Mutex
	units map[Unit]*unitState
	held  int
}

type unitState struct {
	inFlight int
	draining bool
	// written is the holder as this process last wrote it, with the
	// resourceVersion of that write, until the cache has it.
	written   string
	writtenRV string
	wrote     bool
	// held: this process last saw itself holding the unit.
	held bool
	// acquired: OnAcquire ran for the unit since this process last held
	// it.
	acquired bool
}

// Ticket is the outcome of Enter. Done must be called once the reconcile
// that asked ends, whatever the outcome.
type Ticket struct {
	Decision
	// Unit is the unit decided on.
	Unit Unit
	// Holder is the holder object as the claim wrote it, when Enter claimed
	// the unit; nil otherwise.
	Holder client.Object
	// RequeueAfter is when to look again when not acting.
	RequeueAfter time.Duration
	acting       bool
	done         func()
	// unitRef is the unit's Ref with sharding, "" without.
	unitRef string
}

// WithUnit returns ctx carrying, with sharding, the ticket's unit for the
// delivery sinks (delivery.WithUnit); ctx itself without.
func (t Ticket) WithUnit(ctx context.Context) context.Context {
	return delivery.WithUnit(ctx, t.unitRef)
}

// Acting reports whether the reconcile may act on the unit.
func (t Ticket) Acting() bool { return t.acting }

// Done ends the reconcile's hold on the unit.
func (t Ticket) Done() {
	if t.done != nil {
		t.done()
	}
}

// Enabled reports whether the gate splits work.
func (g *Gate) Enabled() bool { return g != nil && g.Config.Enabled() }

// UnitOfCluster resolves the unit of a ClusterDeployment from the cache.
func (g *Gate) UnitOfCluster(ctx context.Context, cd types.NamespacedName) (Unit, error) {
	obj := &k0rdentv1beta1.ClusterDeployment{}
	err := g.Reader.Get(ctx, cd, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		return Unit{}, fmt.Errorf("reading ClusterDeployment %s: %w", cd, err)
	}
	if err == nil {
		if owner := ownerColony(obj); owner != "" {
			return UnitOfCluster(cd, owner, nil), nil
		}
	}
	list := &infrav1.ColonyList{}
	if err := g.Reader.List(ctx, list, client.InNamespace(cd.Namespace)); err != nil {
		return Unit{}, fmt.Errorf("listing the Colonies of %s: %w", cd.Namespace, err)
	}
	colonies := make([]ColonyClusters, 0, len(list.Items))
	for i := range list.Items {
		colonies = append(colonies, ColonyClusters{Name: list.Items[i].Name, Clusters: ClusterNames(&list.Items[i])})
	}
	return UnitOfCluster(cd, "", colonies), nil
}

// ClusterNames are the names of the ClusterDeployments a Colony renders.
func ClusterNames(c *infrav1.Colony) []string {
	out := make([]string, 0, len(c.Spec.ColonyClusters))
	for _, e := range c.Spec.ColonyClusters {
		out = append(out, naming.ClusterDeploymentName(c.Name, e.ClusterName))
	}
	return out
}

// ownerColony is the Colony that owns a ClusterDeployment: its controller
// owner reference, else Apiary's owner labels (Git delivery writes none).
func ownerColony(o metav1.Object) string {
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == KindColony &&
		strings.HasPrefix(ref.APIVersion, infrav1.GroupVersion.Group+"/") {
		return ref.Name
	}
	l := o.GetLabels()
	if l[delivery.LabelOwnerKind] == KindColony && l[delivery.LabelOwnerNamespace] == o.GetNamespace() {
		return l[delivery.LabelOwnerName]
	}
	return ""
}

// Relevant reports whether this shard may have work on unit u: it is the
// unit's desired shard or holds it. Event filters use it to drop other
// shards' objects early; reconciles decide again with Enter.
func (g *Gate) Relevant(ctx context.Context, u Unit) bool {
	if !g.Enabled() {
		return true
	}
	if Desired(u.Key(), g.Config.Shards) == g.Config.Index {
		return true
	}
	holder, exists, err := g.holder(ctx, u)
	return err != nil || (exists && holder == FormatHolder(g.Config.Index))
}

// Enter decides for unit u, writing a claim, a take-over or a release when
// the decision says so. When the ticket is Acting, the unit is not released
// by this process until Done.
func (g *Gate) Enter(ctx context.Context, u Unit, onClaim ...func(client.Object)) (Ticket, error) {
	if !g.Enabled() {
		return Ticket{Decision: Decision{Action: Act}, Unit: u, acting: true}, nil
	}
	since := time.Now()
	holder, exists, err := g.holder(ctx, u)
	if err != nil {
		return Ticket{Unit: u}, err
	}
	s := State{HolderExists: exists, Holder: holder}
	var lapse time.Duration
	if h, err := ParseHolder(holder); err == nil && h != NoHolder && h != g.Config.Index {
		s.HolderAlive, lapse, err = g.leaseHeld(ctx, h)
		if err != nil {
			return Ticket{Unit: u}, err
		}
	}
	t := Ticket{Decision: Decide(g.Config, u, s), Unit: u, unitRef: u.Ref()}
	switch t.Action {
	case Act:
		t.acting, t.done = g.enter(u, s.HolderExists)
		if !t.acting {
			t.RequeueAfter = Retry
		}
	case Claim, TakeOver:
		obj, won, err := g.writeHolder(ctx, u, FormatHolder(g.Config.Index), onClaim...)
		if err != nil || !won {
			t.RequeueAfter = Retry
			return t, err
		}
		log.FromContext(ctx).Info("claimed a unit", "unit", u.String(), "shard", g.Config.Index, "previous", holder)
		t.Holder = obj
		t.acting, t.done = g.enter(u, true)
	case Release:
		t.RequeueAfter = Retry
		if !g.drained(u) {
			return t, nil
		}
		if g.Settled != nil && !g.Settled(ctx, u) {
			return t, nil // the sinks push the unit's changes first
		}
		if _, won, err := g.writeHolder(ctx, u, ""); err != nil || !won {
			return t, err
		}
		log.FromContext(ctx).Info("released a unit", "unit", u.String(), "shard", g.Config.Index, "desired", t.Desired)
		g.mu.Lock()
		g.setHeldLocked(g.stateLocked(u), false)
		g.mu.Unlock()
		t.RequeueAfter = 0
		if g.OnRelease != nil {
			g.OnRelease(ctx, u)
		}
	case Wait:
		t.RequeueAfter = WaitRetry
		if lapse > 0 && lapse+Retry < WaitRetry {
			t.RequeueAfter = lapse + Retry
		}
	}
	if t.acting {
		if err := g.acquire(ctx, u, since); err != nil {
			t.done()
			t.acting, t.done, t.RequeueAfter = false, nil, Retry
			return t, err
		}
	}
	return t, nil
}

// acquire runs OnAcquire once per holding of u by this process.
func (g *Gate) acquire(ctx context.Context, u Unit, since time.Time) error {
	if g.OnAcquire == nil {
		return nil
	}
	g.mu.Lock()
	done := g.stateLocked(u).acquired
	g.mu.Unlock()
	if done {
		return nil
	}
	if err := g.OnAcquire(ctx, u, since); err != nil {
		return fmt.Errorf("taking up %s: %w", u, err)
	}
	g.mu.Lock()
	g.stateLocked(u).acquired = true
	g.mu.Unlock()
	return nil
}

// Holds reports whether this process holds u and acts on it: it claimed
// it (or found it its own) and has not started to release it.
func (g *Gate) Holds(u Unit) bool {
	if !g.Enabled() {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.units[u]
	return st != nil && st.held && !st.draining
}

// enter counts a reconcile of u in flight, unless u is draining; held says
// that the unit's holder object names this shard.
func (g *Gate) enter(u Unit, held bool) (bool, func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stateLocked(u)
	if st.draining {
		return false, nil
	}
	if held {
		g.setHeldLocked(st, true)
	}
	st.inFlight++
	trace("enter", u)
	var once sync.Once
	return true, func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			trace("exit", u)
			st.inFlight--
		})
	}
}

// drained marks u draining (no reconcile enters it any more) and reports
// whether none is in flight. The mark stays after the release: a unit is
// released only when another shard is its desired one, and its desired
// shard is fixed for the life of the process (the number of shards is a
// flag), so this process never acts on it again.
func (g *Gate) drained(u Unit) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.stateLocked(u)
	st.draining = true
	return st.inFlight == 0
}

// setHeldLocked records whether this process holds a unit, and the count
// in apiary_shard_units_held.
func (g *Gate) setHeldLocked(st *unitState, held bool) {
	if st.held == held {
		return
	}
	st.held = held
	if !held {
		st.acquired = false
	}
	if held {
		g.held++
	} else {
		g.held--
	}
	metrics.SetShardUnitsHeld(g.Config.Index, g.held)
}

func (g *Gate) stateLocked(u Unit) *unitState {
	if g.units == nil {
		g.units = map[Unit]*unitState{}
	}
	st := g.units[u]
	if st == nil {
		st = &unitState{}
		g.units[u] = st
	}
	return st
}

// holderObject is an empty holder object of u's kind.
func holderObject(u Unit) client.Object {
	if u.Kind == KindColony {
		return &infrav1.Colony{}
	}
	return &k0rdentv1beta1.ClusterDeployment{}
}

// holder reads u's claim from the cache, or this process's last write of
// it while the cache is older.
func (g *Gate) holder(ctx context.Context, u Unit) (string, bool, error) {
	obj := holderObject(u)
	if err := g.Reader.Get(ctx, u.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("reading %s: %w", u, err)
	}
	holder := obj.GetAnnotations()[HolderAnnotation]
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.units[u]; st != nil && st.wrote {
		if ownwrites.Newer(st.writtenRV, obj.GetResourceVersion()) {
			return st.written, true, nil
		}
		st.wrote = false
	}
	return holder, true, nil
}

// writeHolder sets (or, with "", removes) u's claim with the cached
// resourceVersion as precondition; won is false when another writer came
// first. onClaim changes the holder object in the same write.
func (g *Gate) writeHolder(ctx context.Context, u Unit, value string, onClaim ...func(client.Object)) (client.Object, bool, error) {
	obj := holderObject(u)
	if err := g.Reader.Get(ctx, u.NamespacedName, obj); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	if value == "" {
		delete(ann, HolderAnnotation)
	} else {
		ann[HolderAnnotation] = value
	}
	obj.SetAnnotations(ann)
	for _, f := range onClaim {
		f(obj)
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := g.Client.Patch(ctx, obj, patch, client.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("writing the shard claim of %s: %w", u, err)
	}
	g.mu.Lock()
	st := g.stateLocked(u)
	st.written, st.writtenRV, st.wrote = value, obj.GetResourceVersion(), true
	g.mu.Unlock()
	return obj, true, nil
}

// leaseHeld reports whether shard i's Lease is held and, if so, how long
// until it lapses without renewal.
func (g *Gate) leaseHeld(ctx context.Context, i int) (bool, time.Duration, error) {
	lease := &coordinationv1.Lease{}
	err := g.Reader.Get(ctx, types.NamespacedName{Namespace: g.LeaseNamespace, Name: LeaseName(i)}, lease)
	if apierrors.IsNotFound(err) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("reading the Lease of shard %d: %w", i, err)
	}
	now := time.Now
	if g.now != nil {
		now = g.now
	}
	left := LeaseLeft(lease, now())
	return left > 0, left, nil
}

// LeaseLeft is how long a Lease stays held without renewal: zero when it
// has no holder or lapsed.
func LeaseLeft(l *coordinationv1.Lease, now time.Time) time.Duration {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.LeaseDurationSeconds == nil {
		return 0
	}
	var renewed time.Time
	switch {
	case l.Spec.RenewTime != nil:
		renewed = l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		renewed = l.Spec.AcquireTime.Time
	default:
		return 0
	}
	left := renewed.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second).Sub(now)
	return max(left, 0)
}

// LeaseEvents passes the events of the shards' Leases, for the watches of
// controllers that wait for a shard.
func (g *Gate) LeaseEvents() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := LeaseIndex(o.GetName())
		return ok && o.GetNamespace() == g.LeaseNamespace
	})
}
