// Package preflight holds back the controllers that need kinds the API server
// does not serve yet (k0rdent's CRDs on a fresh management cluster): the
// manager starts, stays healthy and says what it waits for, and registers
// those controllers once the kinds appear.
package preflight

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Gate is a manager Runnable that waits until every required kind is served,
// then runs Setup once. It does not need leader election: controllers added
// by Setup are themselves leader-elected.
type Gate struct {
	// Name identifies the gated controllers in logs.
	Name string
	// Discovery answers which kinds the API server serves.
	Discovery discovery.DiscoveryInterface
	// Required are the kinds the gated controllers watch.
	Required []schema.GroupVersionKind
	// Setup registers the gated controllers with the manager.
	Setup func() error
	// Interval between discovery checks while kinds are missing; 10s when zero.
	Interval time.Duration
	// Log receives one line when the gate starts waiting and one when it opens.
	Log logr.Logger

	open atomic.Bool
}

// Open reports whether the gate has run Setup.
func (g *Gate) Open() bool { return g.open.Load() }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (g *Gate) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable. It returns once Setup ran, or with the
// context's end, or with Setup's error.
func (g *Gate) Start(ctx context.Context) error {
	interval := g.Interval
	if interval == 0 {
		interval = 10 * time.Second
	}
	announced := false
	for {
		missing, err := Missing(g.Discovery, g.Required)
		switch {
		case err != nil:
			g.Log.Error(err, "checking served kinds", "controllers", g.Name)
		case len(missing) == 0:
			if err := g.Setup(); err != nil {
				return fmt.Errorf("setting up %s: %w", g.Name, err)
			}
			g.open.Store(true)
			if announced {
				g.Log.Info("required kinds are now served; controllers started", "controllers", g.Name)
			}
			return nil
		case !announced:
			g.Log.Info("controllers wait for kinds the API server does not serve yet; install k0rdent's CRDs",
				"controllers", g.Name, "missing", strings.Join(missing, ", "))
			announced = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// Missing returns the required kinds that the API server does not serve, as
// "Kind.group/version" strings, sorted.
func Missing(dc discovery.DiscoveryInterface, required []schema.GroupVersionKind) ([]string, error) {
	served := map[schema.GroupVersion]map[string]bool{}
	var missing []string
	for _, gvk := range required {
		gv := gvk.GroupVersion()
		kinds, ok := served[gv]
		if !ok {
			kinds = map[string]bool{}
			list, err := dc.ServerResourcesForGroupVersion(gv.String())
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("discovering %s: %w", gv, err)
			}
			if list != nil {
				for _, r := range list.APIResources {
					kinds[r.Kind] = true
				}
			}
			served[gv] = kinds
		}
		if !kinds[gvk.Kind] {
			missing = append(missing, gvk.Kind+"."+gv.String())
		}
	}
	sort.Strings(missing)
	return missing, nil
}
