package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestZZDiag(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t, "diag")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	workspaceClass(t, "diag-"+ns, ns, "tmpl", nil)
	time.Sleep(time.Second)
	wc, _ := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	w, err := wc.Watch(ctx, &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_ = env.Client.Create(ctx, workspace(ns, fmt.Sprintf("%s-w%d", ns, i), "diag-"+ns, "c1"))
	}
	deadline := time.After(8 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			o := ev.Object.(*workspacesv1.WorkspaceDeployment)
			s := ""
			for _, c := range o.Status.Conditions {
				s += fmt.Sprintf(" %s=%s/%s:%q", c.Type, c.Status, c.Reason, c.Message)
			}
			t.Logf("%s %s rv=%s og=%d phase=%s msg=%q fin=%v%s", o.Name, ev.Type, o.ResourceVersion, o.Status.ObservedGeneration, o.Status.Phase, o.Status.Message, o.Finalizers, s)
		case <-deadline:
			return
		}
	}
}
