package install

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// Verdict orders the outcomes of prerequisite checks, worst last.
type Verdict int

const (
	Satisfied Verdict = iota
	Installing
	Failed
	Conflict
)

// Check is the outcome of checking one prerequisite: its status, a
// verdict and, for a conflict, its reason.
type Check struct {
	Status  workspacesv1.PrerequisiteStatus
	Verdict Verdict
	Reason  string
}

// Ensure finds who provides one prerequisite on the cluster and
// how it is doing: the shared install of any template that is the same
// prerequisite (upgraded when this class pins a newer version), else the
// Colony's services, else a new shared install, created here.
func (in *Installer) Ensure(ctx context.Context, t *Target, p workspacesv1.PrerequisiteSpec) (Check, error) {
	tmpl := p.ServiceTemplate.Name
	wanted := p.Namespace
	if wanted == "" {
		wanted = plan.DefaultPrerequisiteNamespace
	}
	c := Check{Status: workspacesv1.PrerequisiteStatus{Name: tmpl, Source: workspacesv1.PrerequisiteSourceWorkspace, Namespace: wanted}}
	want, err := prerequisite.TemplateInfo(ctx, in.Reader, tmpl, plan.TemplateKey(p.ServiceTemplate))
	if err != nil {
		return c, err
	}
	id := prerequisite.ID{Namespace: t.CDKey.Namespace, Cluster: t.CDKey.Name, Key: want.Key}
	unlock := in.Installs.Lock(id)
	defer unlock()
	inst, err := in.sharedInstall(ctx, id, want)
	if err != nil {
		return c, err
	}
	if inst != nil {
		return in.useSharedInstall(ctx, t, p, c, id, want, inst)
	}

	// The Colony may have installed it through the ClusterDeployment's services.
	if s := colonyService(t.CD.Status.Services, tmpl); s != nil {
		c.Status.Source, c.Status.Namespace = workspacesv1.PrerequisiteSourceColony, s.Namespace
		if namespaceConflict(&c, p) {
			return c, nil
		}
		return serviceVerdict(c, t.CD.Status.Services, tmpl), nil
	}
	for _, s := range t.CD.Spec.ServiceSpec.Services {
		if s.Template == tmpl {
			c.Status.Source, c.Status.Namespace = workspacesv1.PrerequisiteSourceColony, s.Namespace
			if namespaceConflict(&c, p) {
				return c, nil
			}
			return installing(c, "installed by the cluster's services"), nil
		}
	}

	target := plan.NewPrerequisiteTarget(t.CDKey.Name, tmpl, wanted)
	if err := in.deliverPrerequisite(ctx, t, p, target); err != nil {
		return c, err
	}
	in.Installs.Record(id, prerequisite.Candidate{ServiceSet: target.ServiceSet, Release: target.Release, Namespace: wanted, Template: want})
	return installing(c, "installing"), nil
}

// namespaceConflict fails the check when the class insists on a namespace
// other than the one the incumbent (of c.Status) installs into (ADR-0007).
func namespaceConflict(c *Check, p workspacesv1.PrerequisiteSpec) bool {
	if p.Namespace == "" || c.Status.Namespace == p.Namespace {
		return false
	}
	c.Verdict, c.Reason = Conflict, workspacesv1.PrerequisiteNamespaceConflict
	c.Status.Phase = workspacesv1.PrerequisiteFailed
	c.Status.Message = fmt.Sprintf("prerequisite %q is already installed in namespace %q (source: %s); this class requests namespace %q",
		c.Status.Name, c.Status.Namespace, c.Status.Source, p.Namespace)
	return true
}

func installing(c Check, msg string) Check {
	c.Verdict, c.Status.Phase, c.Status.Message = Installing, workspacesv1.PrerequisiteInstalling, msg
	return c
}

// colonyService returns the first service of a ClusterDeployment's status
// that installs tmpl and is not Deleted (kcm 1.11+): a Deleted one is gone
// and installs nothing; nil when there is none.
func colonyService(states []k0rdentv1beta1.ServiceState, tmpl string) *k0rdentv1beta1.ServiceState {
	for i := range states {
		if states[i].Template == tmpl && states[i].State != k0rdentv1beta1.ServiceStateDeleted {
			return &states[i]
		}
	}
	return nil
}

// serviceVerdict reads the state of the service installing a template: a
// Deployed or Failed one decides; a Deleted one (kcm 1.11+) is gone, and
// fails the check only when no other service of the template is left.
func serviceVerdict(c Check, states []k0rdentv1beta1.ServiceState, tmpl string) Check {
	deleted, live := false, false
	for _, s := range states {
		if s.Template != tmpl {
			continue
		}
		switch s.State {
		case k0rdentv1beta1.ServiceStateDeployed:
			c.Verdict, c.Status.Phase, c.Status.Message = Satisfied, workspacesv1.PrerequisiteSatisfied, ""
			return c
		case k0rdentv1beta1.ServiceStateFailed:
			c.Verdict, c.Status.Phase = Failed, workspacesv1.PrerequisiteFailed
			c.Status.Message = fmt.Sprintf("Prerequisite %q failed: %s", tmpl, s.FailureMessage)
			return c
		case k0rdentv1beta1.ServiceStateDeleted:
			deleted = true
		default:
			live = true
		}
	}
	if deleted && !live {
		c.Verdict, c.Status.Phase = Failed, workspacesv1.PrerequisiteFailed
		c.Status.Message = fmt.Sprintf("Prerequisite %q was deleted from the cluster (k0rdent reports it Deleted)", tmpl)
		return c
	}
	return installing(c, "installing")
}

// Installer installs the prerequisites of workspaces' classes once per
// child cluster, shared between the workspaces of the cluster, and tells
// how each one is doing for a workspace.
type Installer struct {
	// Reader reads ServiceSets and ServiceTemplates: the manager's cache.
	Reader client.Reader
	// EventRecorder records on a workspace that it upgrades a shared install.
	EventRecorder events.EventRecorder
	// Bundles holds the workspace-prerequisite bundle.
	Bundles *render.Resolver
	// Sink delivers the shared ServiceSets.
	Sink delivery.Sink
	// Settings are passed to bundles as .Input.operator.
	Settings map[string]any
	// Installs serialises the decisions about one install and remembers the
	// installs this process delivered until its cache has them.
	Installs *prerequisite.Writes
}

// Target is the workspace whose prerequisites are checked, as the earlier
// steps found it.
type Target struct {
	Obj   *workspacesv1.WorkspaceDeployment
	Class *workspacesv1.WorkspaceClass
	CD    *k0rdentv1beta1.ClusterDeployment
	CDKey types.NamespacedName
}
