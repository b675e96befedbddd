package activity

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
)

// MaxToken bounds an endpoint token read from a child Secret.
const MaxToken = 4096

// ChildClients gives a client of a ClusterDeployment's child cluster
// (childcluster.Manager).
type ChildClients interface {
	Client(ctx context.Context, cd types.NamespacedName) (client.Client, error)
}

// Reader answers the workspace controller (lifecycle.ActivityReader) with
// a Prober: it turns a class's idle policy into a Target, reading the
// endpoint's token from its Secret in the workspace's namespace on the
// child. What it cannot build is an unknown activity.
type Reader struct {
	Prober *Prober
	// Children reads token Secrets; endpoints with a token are unknown when nil.
	Children ChildClients
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

var _ lifecycle.ActivityReader = &Reader{}

// LastActivity asks the policy's source when the workspace was last active.
func (r *Reader) LastActivity(ctx context.Context, t lifecycle.ActivityTarget) lifecycle.Activity {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	target, err := r.target(ctx, t)
	if err != nil || r.Prober == nil {
		return lifecycle.Activity{}
	}
	obs := r.Prober.Observe(ctx, target, now)
	return lifecycle.Activity{Known: obs.Known, Last: obs.LastActivity}
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
