package controller_test

import (
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/controller"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/internal/delivery"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
	"github.com/apiaryhq/apiary/internal/render"
)

// recorder is a manager that records what is added to it.
type recorder struct {
	ctrl.Manager
	added []manager.Runnable
}

func (r *recorder) Add(run manager.Runnable) error {
	r.added = append(r.added, run)
	return r.Manager.Add(run)
}

// nameOf is the name of a controller-runtime controller, "" for another
// runnable.
func nameOf(run manager.Runnable) string {
	v := reflect.ValueOf(run)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		if f := v.Elem().FieldByName("Name"); f.IsValid() && f.Kind() == reflect.String {
			return f.String()
		}
	}
	return ""
}

// TestTheOneListRegistersEveryControllerOnce: each entry of the list adds
// exactly one runnable to the manager — its own controller, named like the
// entry, or its runner — so no controller registers another, and what the
// manager runs is the list.
func TestTheOneListRegistersEveryControllerOnce(t *testing.T) {
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(controllertest.Env.Config, ctrl.Options{Scheme: controllertest.Env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptrTo(true)}})
	g.Expect(err).NotTo(HaveOccurred())
	bundles, err := render.NewRegistry("")
	g.Expect(err).NotTo(HaveOccurred())
	children := childcluster.NewManager(mgr.GetClient(), childcluster.Options{Scheme: mgr.GetScheme()})
	rec := &recorder{Manager: mgr}
	entries, err := controller.List(rec, controller.Deps{
		Bundles: bundles, Sink: delivery.NewDirect(mgr.GetClient(), mgr.GetAPIReader(), delivery.DirectOptions{Scheme: mgr.GetScheme()}),
		Children: children, Routes: routesink.NewDirect(children),
	}, controller.Config{ClusterWide: true, PrerequisiteGracePeriod: time.Hour})
	g.Expect(err).NotTo(HaveOccurred())

	var names []string
	for _, e := range entries {
		before := len(rec.added)
		g.Expect(e.Setup(rec)).To(Succeed(), e.Name)
		added := rec.added[before:]
		g.Expect(added).To(HaveLen(1), "entry %s adds one runnable", e.Name)
		if n := nameOf(added[0]); n != "" {
			g.Expect(n).To(Equal(e.Name), "the controller of entry %s", e.Name)
		}
		names = append(names, e.Name)
	}
	g.Expect(names).To(Equal([]string{"colony", "workspaceclass", "workspacedeployment", "workspace-orphans", "prerequisite", "route-sweeper", "tenantquota"}))
}

func ptrTo[T any](v T) *T { return &v }
