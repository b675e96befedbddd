package install

import (
	"context"
	"fmt"
	"slices"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// sharedInstall is the install of a prerequisite on a cluster that serves
// a workspace: its ServiceSet (nil while pending) and what it installs.
type sharedInstall struct {
	prerequisite.Candidate
	obj *k0rdentv1beta1.ServiceSet
	// pending is true while what this process delivered is not in the cache
	// yet, so the ServiceSet's state says nothing of it.
	pending bool
}

// sharedInstall finds the install of want's prerequisite on the cluster of
// id: among the cluster's prerequisite ServiceSets (and the ServiceSet named
// after want's template, whatever its labels), those whose template is want
// or has its key, the best by prerequisite.Pick, as this process last
// delivered it when its cache does not show that yet. nil when there is none.
func (in *Installer) sharedInstall(ctx context.Context, id prerequisite.ID, want prerequisite.Template) (*sharedInstall, error) {
	sets, err := prerequisite.ServiceSets(ctx, in.Reader, types.NamespacedName{Namespace: id.Namespace, Name: id.Cluster})
	if err != nil {
		return nil, err
	}
	legacy := plan.PrerequisiteServiceSetName(id.Cluster, want.Name)
	if !slices.ContainsFunc(sets, func(ss k0rdentv1beta1.ServiceSet) bool { return ss.Name == legacy }) {
		ss := &k0rdentv1beta1.ServiceSet{}
		switch err := in.Reader.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: legacy}, ss); {
		case err == nil:
			sets = append(sets, *ss)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading prerequisite ServiceSet %s: %w", legacy, err)
		}
	}
	var cands []prerequisite.Candidate
	var objs []*k0rdentv1beta1.ServiceSet
	for i := range sets {
		ss := &sets[i]
		entry := prerequisite.Entry(ss)
		if ss.Spec.Cluster != id.Cluster || entry == nil {
			continue
		}
		t, err := prerequisite.InstalledTemplate(ctx, in.Reader, ss.Namespace, entry.Template)
		if err != nil {
			return nil, err
		}
		if !t.Same(want) {
			continue
		}
		cands = append(cands, prerequisite.Candidate{ServiceSet: ss.Name, Release: entry.Name, Namespace: entry.Namespace,
			Template: t, Deleting: !ss.DeletionTimestamp.IsZero() || in.Installs.Removing(ss.Namespace, ss.Name)})
		objs = append(objs, ss)
	}
	var cached *prerequisite.Candidate
	var obj *k0rdentv1beta1.ServiceSet
	if i := prerequisite.Pick(cands); i >= 0 {
		cached, obj = &cands[i], objs[i]
	}
	cur, pending := in.Installs.Current(id, cached)
	if cur == nil {
		return nil, nil
	}
	if cached == nil || cur.ServiceSet != cached.ServiceSet {
		obj = nil
	}
	return &sharedInstall{Candidate: *cur, obj: obj, pending: pending}, nil
}

// useSharedInstall checks a prerequisite against the install that serves
// it: a namespace the class insists on, a removal under way, and what
// prerequisite.Decide says of the versions. An upgrade is delivered here.
func (in *Installer) useSharedInstall(ctx context.Context, t *Target, p workspacesv1.PrerequisiteSpec,
	c Check, id prerequisite.ID, want prerequisite.Template, inst *sharedInstall) (Check, error) {
	c.Status.Namespace = inst.Namespace
	if namespaceConflict(&c, p) {
		return c, nil
	}
	if inst.Deleting {
		return installing(c, fmt.Sprintf("the shared install %s is being removed; it is installed again once it is gone", inst.ServiceSet)), nil
	}
	v := prerequisite.Decide(&inst.Template, want, p.ServiceTemplate.VersionConstraint)
	if v.Action == prerequisite.Refuse && conditions.IsTrue(t.Obj, workspacesv1.PrerequisitesMetCondition) {
		// It runs on that install already (a newer class upgraded it since):
		// a new generation of it is not failed for it.
		v = prerequisite.Verdict{Action: prerequisite.Keep, Reason: prerequisite.ReasonOutsideConstraint}
	}
	switch v.Action {
	case prerequisite.Refuse:
		c.Verdict, c.Reason = Conflict, workspacesv1.PrerequisiteVersionConflictReason
		c.Status.Phase = workspacesv1.PrerequisiteFailed
		c.Status.Message = fmt.Sprintf("prerequisite %q is installed on the cluster as %s, outside this class's versionConstraint %q; "+
			"a shared install is never downgraded", want.Name, inst.Template, p.ServiceTemplate.VersionConstraint)
		return c, nil
	case prerequisite.Upgrade:
		target := plan.PrerequisiteTarget{ServiceSet: inst.ServiceSet, Release: inst.Release, Namespace: inst.Namespace}
		if err := in.deliverPrerequisite(ctx, t, p, target); err != nil {
			return c, err
		}
		up := inst.Candidate
		up.Template = want
		in.Installs.Record(id, up)
		if in.EventRecorder != nil {
			in.EventRecorder.Eventf(t.Obj, nil, corev1.EventTypeNormal, workspacesv1.PrerequisiteUpgradedReason, "Reconcile",
				"upgrading the shared install %s of the cluster from %s to %s", inst.ServiceSet, inst.Template, want)
		}
		return installing(c, fmt.Sprintf("upgrading the shared install from %s to %s", inst.Template, want)), nil
	}
	if inst.pending || inst.obj == nil {
		return installing(c, "installing"), nil
	}
	c = serviceVerdict(c, inst.obj.Status.Services, inst.Template.Name)
	if c.Verdict == Satisfied && inst.Template.Name != want.Name {
		c.Status.Message = keptMessage(v.Reason, inst.Template, want)
	}
	return c, nil
}

// keptMessage says why a workspace is served by an install of another
// template than its class pins.
func keptMessage(reason string, installed, want prerequisite.Template) string {
	switch reason {
	case prerequisite.ReasonInstalledNewer:
		return fmt.Sprintf("served by the shared install of %s, newer than %s", installed, want)
	case prerequisite.ReasonSameVersion:
		return fmt.Sprintf("served by the shared install of %s, of the same version as %s", installed, want)
	case prerequisite.ReasonOutsideConstraint:
		return fmt.Sprintf("served by the shared install of %s, outside the class's versionConstraint; kept, as the workspace ran on it already", installed)
	}
	return fmt.Sprintf("served by the shared install of %s (versions without semantic order are never upgraded)", installed)
}

// deliverPrerequisite renders and delivers the shared ServiceSet of a
// prerequisite at target, installing the class's template. It belongs to no
// workspace: it outlives them, as other workspaces of the cluster share it.
func (in *Installer) deliverPrerequisite(ctx context.Context, t *Target, p workspacesv1.PrerequisiteSpec,
	target plan.PrerequisiteTarget) error {
	tmpl := p.ServiceTemplate.Name
	bundle, err := in.Bundles.Get(plan.PrerequisiteBundle)
	if err != nil {
		return fmt.Errorf("prerequisite bundle: %w", err)
	}
	req, err := plan.PrerequisiteRequest(t.Class, p, t.CDKey.Name, t.CDKey.Namespace, target, in.Settings)
	if err != nil {
		return err
	}
	out, err := bundle.RenderContext(ctx, req)
	if err != nil {
		return fmt.Errorf("rendering prerequisite %q: %w", tmpl, err)
	}
	if _, err := in.Sink.Apply(ctx, prerequisite.Owner(t.CDKey.Namespace, target.ServiceSet), out.Objects, nil); err != nil {
		return fmt.Errorf("delivering prerequisite %q: %w", tmpl, err)
	}
	return nil
}
