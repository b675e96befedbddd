package standin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// step is the plan for one service of a reconcile.
type step struct {
	entry  *k0rdentv1beta1.ServiceWithValues
	state  string
	msg    string
	rec    *record // nil when nothing is provisioned
	run    bool    // install or upgrade now
	chart  string
	values map[string]any
	opts   installOptions
	// instant reports the release installed without running Helm.
	instant bool
}

// Reconcile plays kcm's ServiceSet controller and Sveltos adapter for one ServiceSet.
func (s *ServiceSets) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ss := &k0rdentv1beta1.ServiceSet{}
	if err := s.Client.Get(ctx, req.NamespacedName, ss); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ss.Spec.Cluster == "" {
		return reconcile.Result{}, nil // self-management targets the management cluster: not played
	}
	if _, paused := ss.Annotations[k0rdentv1beta1.ServiceSetPausedAnnotation]; paused {
		return reconcile.Result{}, s.reconcilePaused(ctx, ss)
	}
	if !ss.DeletionTimestamp.IsZero() {
		return s.reconcileDelete(ctx, ss)
	}
	if !controllerutil.ContainsFinalizer(ss, k0rdentv1beta1.ServiceSetFinalizer) {
		patch := client.MergeFromWithOptions(ss.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(ss, k0rdentv1beta1.ServiceSetFinalizer)
		if err := s.Client.Patch(ctx, ss, patch); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding finalizer to ServiceSet %s: %w", req, err)
		}
	}
	return s.reconcileNormal(ctx, ss)
}

// reconcilePaused plays a ServiceSet whose Sveltos Profile is paused: no
// Helm action runs and the status stays as last written. kcm still adds its
// finalizer, and a deleted ServiceSet keeps it (the paused Profile never
// runs its delete path) until the pause is lifted.
func (s *ServiceSets) reconcilePaused(ctx context.Context, ss *k0rdentv1beta1.ServiceSet) error {
	if !ss.DeletionTimestamp.IsZero() || controllerutil.ContainsFinalizer(ss, k0rdentv1beta1.ServiceSetFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(ss.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(ss, k0rdentv1beta1.ServiceSetFinalizer)
	if err := s.Client.Patch(ctx, ss, patch); err != nil {
		return fmt.Errorf("adding finalizer to paused ServiceSet %s/%s: %w", ss.Namespace, ss.Name, err)
	}
	return nil
}

// reconcileNormal brings the releases of the ServiceSet in line with its
// spec: services whose inputs changed go Provisioning (written first), then
// are installed or upgraded.
func (s *ServiceSets) reconcileNormal(ctx context.Context, ss *k0rdentv1beta1.ServiceSet) (reconcile.Result, error) {
	status := ss.Status.DeepCopy()
	status.Cluster = &corev1.ObjectReference{
		APIVersion: k0rdentv1beta1.GroupVersion.String(), Kind: k0rdentv1beta1.ClusterDeploymentKind,
		Namespace: ss.Namespace, Name: ss.Spec.Cluster,
	}
	status.Provider = k0rdentv1beta1.ProviderState{Ready: true}
	setServiceSetConditions(status, ss.Generation)
	rel := s.reportAs(ctx, ss)

	kubeconfig, err := s.kubeconfig(ctx, ss)
	if err != nil {
		return reconcile.Result{}, err
	}
	cluster := types.NamespacedName{Namespace: ss.Namespace, Name: ss.Spec.Cluster}
	var ch *childCluster
	if kubeconfig != nil {
		if ch, err = s.helm.child(cluster, kubeconfig); err != nil {
			kubeconfig = nil // an unusable kubeconfig is no kubeconfig
			ctrl.LoggerFrom(ctx).Error(err, "child cluster", "cluster", cluster)
		}
	}
	if ch == nil {
		// The Profile matches no cluster yet: nothing is deployed.
		var states []k0rdentv1beta1.ServiceState
		for i := range ss.Spec.Services {
			states = append(states, serviceState(ss.Status.Services, &ss.Spec.Services[i], k0rdentv1beta1.ServiceStatePending, ""))
		}
		status.Services, status.Deployed = states, false
		rel.report(status, ss.Generation)
		return reconcile.Result{}, s.patchStatus(ctx, ss, status)
	}

	result := reconcile.Result{}
	requeue := func(d time.Duration) {
		if d > 0 && (result.RequeueAfter == 0 || d < result.RequeueAfter) {
			result.RequeueAfter = d
		}
	}
	removing, err := s.removeDropped(ctx, ss, ch, rel)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "removing services", "serviceSet", client.ObjectKeyFromObject(ss))
		requeue(s.retryInterval())
	}
	now := time.Now()
	steps := make([]step, len(ss.Spec.Services))
	for i := range ss.Spec.Services {
		var wait time.Duration
		steps[i], wait = s.plan(ctx, ss, &ss.Spec.Services[i], kubeconfigHash(kubeconfig), now)
		requeue(wait)
	}

	// Provisioning is written before anything is installed.
	states := func() []k0rdentv1beta1.ServiceState {
		var out []k0rdentv1beta1.ServiceState
		for i := range steps {
			st := serviceState(ss.Status.Services, steps[i].entry, steps[i].state, steps[i].msg)
			if rel == KCM112 && steps[i].rec != nil {
				st.LastDeployedHash = deployedHash(ss.Status.Services, &st, s.snapshot(steps[i].rec).hash)
			}
			out = append(out, st)
		}
		return append(out, removing...)
	}
	status.Services = states()
	status.Deployed = allDeployed(status.Services)
	rel.report(status, ss.Generation)
	if err := s.patchStatus(ctx, ss, status); err != nil {
		return reconcile.Result{}, err
	}

	for i := range steps {
		st := &steps[i]
		if !st.run {
			continue
		}
		installed, err := true, error(nil)
		if !st.instant {
			installed, err = ch.upgradeInstall(ctx, st.entry.Name, st.entry.Namespace, st.chart, st.values, st.opts)
		}
		if err != nil {
			msg := err.Error()
			s.update(st.rec, func(r *record) { r.failure, r.failedAt = msg, time.Now() })
			st.state, st.msg = k0rdentv1beta1.ServiceStateFailed, msg
			requeue(s.retryInterval())
			continue
		}
		s.helm.count(releaseKey{cluster: cluster, namespace: st.entry.Namespace, name: st.entry.Name}, installed)
		s.update(st.rec, func(r *record) { r.applied, r.failure = true, "" })
		st.state, st.msg = k0rdentv1beta1.ServiceStateDeployed, ""
	}
	status = ss.Status.DeepCopy()
	status.Services = states()
	status.Deployed = allDeployed(status.Services)
	rel.report(status, ss.Generation)
	return result, s.patchStatus(ctx, ss, status)
}

// plan decides the state of one service and whether to install it now; the
// duration is when to look again.
func (s *ServiceSets) plan(ctx context.Context, ss *k0rdentv1beta1.ServiceSet, entry *k0rdentv1beta1.ServiceWithValues,
	child string, now time.Time) (step, time.Duration) {
	key := serviceKey{uid: ss.UID, namespace: entry.Namespace, name: entry.Name}
	st := step{entry: entry}
	fail := func(msg string) (step, time.Duration) {
		s.forget(key)
		st.state, st.msg = k0rdentv1beta1.ServiceStateFailed, msg
		return st, 0
	}

	tpl := &k0rdentv1beta1.ServiceTemplate{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: ss.Namespace, Name: entry.Template}, tpl)
	if err != nil && !apierrors.IsNotFound(err) {
		return fail(fmt.Sprintf("getting ServiceTemplate %s/%s: %v", ss.Namespace, entry.Template, err))
	}
	if err != nil || !tpl.Status.Valid {
		// kcm v1.8 leaves services of missing or invalid templates Pending.
		s.forget(key)
		st.state = k0rdentv1beta1.ServiceStatePending
		return st, 0
	}
	if msg, ok := tpl.Annotations[AnnotationFail]; ok {
		return fail(msg)
	}
	delay, err := parseDelay(tpl.Annotations)
	if err != nil {
		return fail(fmt.Sprintf("ServiceTemplate %s/%s: %v", ss.Namespace, entry.Template, err))
	}
	st.chart = ChartWorkspace
	if name, ok := tpl.Annotations[AnnotationChart]; ok {
		st.chart = name
	}
	if _, err := loadChart(st.chart); err != nil {
		return fail(fmt.Sprintf("ServiceTemplate %s/%s: %v", ss.Namespace, entry.Template, err))
	}
	if st.values, err = serviceValues(ctx, s.Client, ss.Namespace, ss.Spec.Cluster, entry); err != nil {
		return fail(err.Error())
	}
	st.opts = helmInstallOptions(entry.HelmOptions)
	st.instant = tpl.Annotations[AnnotationInstant] == "true"

	st.rec = s.record(key, inputsHash(child, &st), now)
	rec := s.snapshot(st.rec)
	st.state = k0rdentv1beta1.ServiceStateProvisioning
	switch {
	case rec.applied:
		st.state = k0rdentv1beta1.ServiceStateDeployed
	case tpl.Annotations[AnnotationHang] == "true":
	case now.Before(rec.started.Add(delay)):
		return st, rec.started.Add(delay).Sub(now)
	case rec.failure != "" && now.Before(rec.failedAt.Add(s.retryInterval())):
		st.state, st.msg = k0rdentv1beta1.ServiceStateFailed, rec.failure
		return st, rec.failedAt.Add(s.retryInterval()).Sub(now)
	case rec.failure != "":
		// A retry stays Failed until it succeeds.
		st.state, st.msg, st.run = k0rdentv1beta1.ServiceStateFailed, rec.failure, true
	default:
		st.run = true
	}
	return st, 0
}

// inputsHash identifies what a service installs: child cluster, template,
// version, chart, namespace, options and values (valuesFrom merged in). As
// with Sveltos, only a change of these upgrades the release: a resync or a
// change of another service of the ServiceSet does not.
func inputsHash(child string, st *step) string {
	values, _ := json.Marshal(st.values) // maps from YAML always marshal
	h := sha256.New()
	_, _ = fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%t\x00", child, st.entry.Template, ptr.Deref(st.entry.Version, ""),
		st.chart, st.entry.Namespace, st.opts.createNamespace)
	_, _ = h.Write(values)
	return hex.EncodeToString(h.Sum(nil))
}

// helmInstallOptions reads the options the stand-in honours:
// installOptions.createNamespace, else the deprecated createNamespace.
func helmInstallOptions(o *k0rdentv1beta1.ServiceHelmOptions) installOptions {
	var opts installOptions
	if o == nil {
		return opts
	}
	if o.CreateNamespace != nil {
		opts.createNamespace = *o.CreateNamespace
	}
	if o.InstallOptions != nil {
		var install struct {
			CreateNamespace *bool `json:"createNamespace"`
		}
		if err := json.Unmarshal(o.InstallOptions.Raw, &install); err == nil && install.CreateNamespace != nil {
			opts.createNamespace = *install.CreateNamespace
		}
	}
	return opts
}

// removeDropped uninstalls the releases of services that left the spec and
// returns those it could not remove yet, as Deleting; like kcm 1.12 (rel),
// it also returns those it removed, as Deleted.
func (s *ServiceSets) removeDropped(ctx context.Context, ss *k0rdentv1beta1.ServiceSet, ch *childCluster,
	rel KCMRelease) ([]k0rdentv1beta1.ServiceState, error) {
	var left []k0rdentv1beta1.ServiceState
	var firstErr error
	for _, old := range ss.Status.Services {
		if inSpec(ss, old.Name, old.Namespace) {
			continue
		}
		if old.State == k0rdentv1beta1.ServiceStateDeleted {
			if rel == KCM112 {
				left = append(left, old)
			}
			continue
		}
		s.forget(serviceKey{uid: ss.UID, namespace: old.Namespace, name: old.Name})
		if err := ch.uninstall(ctx, old.Name, old.Namespace); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			left = append(left, deleting(old))
		} else if rel == KCM112 {
			left = append(left, deletedState(old))
		}
	}
	return left, firstErr
}

// reconcileDelete marks every service Deleting, uninstalls the releases and
// removes the finalizer. A child without kubeconfig has nothing to remove;
// one that cannot be reached is given up after the deletion grace.
func (s *ServiceSets) reconcileDelete(ctx context.Context, ss *k0rdentv1beta1.ServiceSet) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(ss, k0rdentv1beta1.ServiceSetFinalizer) {
		s.forget(serviceKey{uid: ss.UID})
		return reconcile.Result{}, nil
	}
	status := ss.Status.DeepCopy()
	setServiceSetConditions(status, ss.Generation)
	rel := s.reportAs(ctx, ss)
	status.Services = nil
	for _, old := range ss.Status.Services {
		if old.State == k0rdentv1beta1.ServiceStateDeleted {
			status.Services = append(status.Services, old)
			continue
		}
		status.Services = append(status.Services, deleting(old))
	}
	for i := range ss.Spec.Services {
		e := &ss.Spec.Services[i]
		if findState(ss.Status.Services, e.Name, e.Namespace) == nil {
			status.Services = append(status.Services, serviceState(nil, e, k0rdentv1beta1.ServiceStateDeleting, ""))
		}
	}
	status.Deployed = false
	rel.report(status, ss.Generation)
	if err := s.patchStatus(ctx, ss, status); err != nil {
		return reconcile.Result{}, err
	}

	kubeconfig, err := s.kubeconfig(ctx, ss)
	if err != nil {
		return reconcile.Result{}, err
	}
	if kubeconfig != nil {
		cluster := types.NamespacedName{Namespace: ss.Namespace, Name: ss.Spec.Cluster}
		ch, err := s.helm.child(cluster, kubeconfig)
		for i := 0; err == nil && i < len(status.Services); i++ {
			err = ch.uninstall(ctx, status.Services[i].Name, status.Services[i].Namespace)
		}
		if err != nil {
			if wait := time.Until(ss.DeletionTimestamp.Add(s.deletionGrace())); wait > 0 {
				ctrl.LoggerFrom(ctx).V(1).Info("retrying the removal of services", "error", err.Error())
				return reconcile.Result{RequeueAfter: min(wait, time.Second)}, nil
			}
			ctrl.LoggerFrom(ctx).Info("giving up the services of an unreachable cluster", "error", err.Error())
		} else if err := s.reportDeleted(ctx, ss, status, rel); err != nil {
			return reconcile.Result{}, err
		}
	}
	patch := client.MergeFromWithOptions(ss.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(ss, k0rdentv1beta1.ServiceSetFinalizer)
	if err := s.Client.Patch(ctx, ss, patch); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("removing finalizer from ServiceSet %s/%s: %w", ss.Namespace, ss.Name, err)
	}
	s.forget(serviceKey{uid: ss.UID})
	return reconcile.Result{}, nil
}

// kubeconfig returns the child cluster's kubeconfig from the Secret
// <spec.cluster>-kubeconfig, or nil when there is none.
func (s *ServiceSets) kubeconfig(ctx context.Context, ss *k0rdentv1beta1.ServiceSet) ([]byte, error) {
	key := client.ObjectKey{Namespace: ss.Namespace, Name: KubeconfigSecretName(ss.Spec.Cluster)}
	secret := &corev1.Secret{}
	if err := s.Client.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting Secret %s: %w", key, err)
	}
	if v := secret.Data[k0rdentv1beta1.KubeconfigSecretKey]; len(v) > 0 {
		return v, nil
	}
	return nil, nil
}
