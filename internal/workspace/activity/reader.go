package activity

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
)

// MaxToken bounds an endpoint token read from a child Secret.
const MaxToken = 4096

// UpdatesBuffer is how many workspaces with a fresh answer the Updates
// channel holds; when it is full an update is dropped, and the workspace's
// own retry (lifecycle.Activity.Pending) brings it back.
const UpdatesBuffer = 1024

// keptFor is how long an answer nobody took is kept: the workspace was
// deleted or lost its idle policy.
const keptFor = time.Hour

// ChildClients gives a client of a ClusterDeployment's child cluster
// (childcluster.Manager).
type ChildClients interface {
	Client(ctx context.Context, cd types.NamespacedName) (client.Client, error)
}

// Reader answers the workspace controller (lifecycle.ActivityReader) with
// a Prober: it turns a class's idle policy into a Target, reading the
// endpoint's token from its Secret in the workspace's namespace on the
// child. What it cannot build is an unknown activity.
//
// It never makes its caller wait for a source: LastActivity starts a probe
// of the workspace on a goroutine of its own (one at a time per workspace;
// the Prober bounds how many run at once and for how long) and answers
// Pending, or hands out the answer of the probe that finished since, once.
// When a probe finishes, the workspace is sent on Subscribe's channel, so
// that a watch wakes it. A tenant's slow endpoint so delays nothing but its
// own workspace's idle decision.
type Reader struct {
	Prober *Prober
	// Children reads token Secrets; endpoints with a token are unknown when nil.
	Children ChildClients
	// Clock is the clock; the wall clock when nil. It must be the
	// reconciler's: an answer's At is on it.
	Clock clock.PassiveClock

	once    sync.Once
	mu      sync.Mutex
	entries map[types.NamespacedName]*entry
	updates chan event.GenericEvent
}

// entry is a workspace's probe in flight, or its answer not yet taken.
type entry struct {
	inFlight bool
	answer   *lifecycle.Activity
	doneAt   time.Time
}

var _ lifecycle.ActivityReader = &Reader{}

func (r *Reader) init() {
	r.once.Do(func() {
		r.entries = map[types.NamespacedName]*entry{}
		r.updates = make(chan event.GenericEvent, UpdatesBuffer)
	})
}

func (r *Reader) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

// Subscribe returns the channel on which a workspace is sent when a probe
// of it finished (a WorkspaceDeployment of its key only).
func (r *Reader) Subscribe() <-chan event.GenericEvent {
	r.init()
	return r.updates
}

// LastActivity hands out the answer of the workspace's last finished
// probe, once; else it starts a probe (unless one is in flight) and
// answers Pending. It never waits for a source.
func (r *Reader) LastActivity(_ context.Context, t lifecycle.ActivityTarget) lifecycle.Activity {
	r.init()
	key := t.Workspace
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.entries[key]
	if e != nil && e.answer != nil {
		a := *e.answer
		e.answer = nil
		if !e.inFlight {
			delete(r.entries, key)
		}
		return a
	}
	if e == nil {
		r.sweep()
		e = &entry{}
		r.entries[key] = e
	}
	if !e.inFlight {
		e.inFlight = true
		go r.probe(copyTarget(t))
	}
	return lifecycle.Activity{Pending: true}
}

// sweep drops answers nobody took for keptFor; r.mu is held.
func (r *Reader) sweep() {
	now := r.now()
	for k, e := range r.entries {
		if !e.inFlight && now.Sub(e.doneAt) > keptFor {
			delete(r.entries, k)
		}
	}
}

// probe asks the workspace's source and keeps the answer for its next
// LastActivity, then wakes the workspace.
func (r *Reader) probe(t lifecycle.ActivityTarget) {
	a := r.observe(t)
	r.mu.Lock()
	e := r.entries[t.Workspace]
	if e == nil {
		e = &entry{}
		r.entries[t.Workspace] = e
	}
	e.inFlight, e.answer, e.doneAt = false, &a, r.now()
	r.mu.Unlock()
	ws := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: t.Workspace.Namespace, Name: t.Workspace.Name}}
	select {
	case r.updates <- event.GenericEvent{Object: ws}:
	default:
	}
}

// observe asks the source once, on a context of its own bounded by the
// Prober's timeout (the token's read included): the reconcile that asked
// may be long gone.
func (r *Reader) observe(t lifecycle.ActivityTarget) lifecycle.Activity {
	now := r.now()
	if r.Prober == nil {
		return lifecycle.Activity{At: now, Detail: "no prober"}
	}
	timeout := r.Prober.Timeout
	if timeout <= 0 {
		timeout = defaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	target, err := r.target(ctx, t)
	if err != nil {
		return lifecycle.Activity{At: now, Detail: safeText(err.Error(), "")}
	}
	obs := r.Prober.Observe(ctx, target, now)
	return lifecycle.Activity{Known: obs.Known, Last: obs.LastActivity, At: now, Refused: obs.Refused, Detail: obs.Detail}
}

// copyTarget copies what the probe reads of a target, so that it shares
// nothing with the caller's (cached) objects.
func copyTarget(t lifecycle.ActivityTarget) lifecycle.ActivityTarget {
	t.Policy, t.Endpoint = t.Policy.DeepCopy(), t.Endpoint.DeepCopy()
	return t
}

// target is the Target of a workspace's idle policy.
func (r *Reader) target(ctx context.Context, t lifecycle.ActivityTarget) (Target, error) {
	p := t.Policy
	if p == nil {
		return Target{}, fmt.Errorf("no idle policy")
	}
	out := Target{Cluster: t.Cluster, Namespace: t.Namespace, Window: p.After.Duration}
	src := p.Source
	switch {
	case src.Prometheus != nil:
		out.Format, out.Threshold = PrometheusGPU, float64(src.Prometheus.ThresholdPercent)
		return out, nil
	case src.Endpoint != nil && t.Endpoint != nil:
	default:
		return Target{}, fmt.Errorf("the idle policy names no endpoint of the class")
	}
	svc, err := access.ServiceName(t.Release, *t.Endpoint)
	if err != nil {
		return Target{}, err
	}
	out.Service, out.Port, out.Path = svc, t.Endpoint.Port, src.Endpoint.Path
	switch src.Endpoint.Format {
	case workspacesv1.ActivityJupyterStatus:
		out.Format = JupyterStatus
	case workspacesv1.ActivityCodeServerHealthz:
		out.Format = CodeServerHealthz
	default:
		return Target{}, fmt.Errorf("unknown activity format %q", src.Endpoint.Format)
	}
	if ref := src.Endpoint.TokenSecret; ref != nil {
		if out.Token, err = r.token(ctx, t, ref); err != nil {
			return Target{}, err
		}
	}
	return out, nil
}

// token reads an endpoint's token from a Secret of the workspace's
// namespace on the child, bounded.
func (r *Reader) token(ctx context.Context, t lifecycle.ActivityTarget, ref *workspacesv1.SecretKeyRef) (string, error) {
	if r.Children == nil {
		return "", fmt.Errorf("no child clients")
	}
	c, err := r.Children.Client(ctx, t.Cluster)
	if err != nil {
		return "", err
	}
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: ref.Name}, s); err != nil {
		return "", fmt.Errorf("reading the token Secret: %w", err)
	}
	v, ok := s.Data[ref.Key]
	if !ok || len(v) == 0 || len(v) > MaxToken {
		return "", fmt.Errorf("the token Secret has no usable key %q", ref.Key)
	}
	return string(v), nil
}
