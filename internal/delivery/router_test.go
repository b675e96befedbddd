package delivery

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/apiaryhq/apiary/internal/gitrepo"
)

func TestTenantOf(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        *Tenant
	}{
		{"no annotation", nil, nil},
		{"repository only", map[string]string{AnnotationGitRepository: "team"},
			&Tenant{Namespace: "ns", GitRepository: "team", Path: "apiary/ns"}},
		{"everything", map[string]string{AnnotationGitRepository: "team", AnnotationGitPath: "clusters/a", AnnotationGitKustomization: "apply"},
			&Tenant{Namespace: "ns", GitRepository: "team", Path: "clusters/a", Kustomization: "apply"}},
		{"path without repository", map[string]string{AnnotationGitPath: "clusters/a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{}
			ns.Name, ns.Annotations = "ns", tt.annotations
			NewWithT(t).Expect(TenantOf(ns)).To(Equal(tt.want))
		})
	}
}

// TestRouter_SendsAnnotatedNamespacesToTheirRepository routes an owner of a
// plain namespace to the default (direct) sink and an owner of an annotated
// namespace to the tenant's repository, with its notices.
func TestRouter_SendsAnnotatedNamespacesToTheirRepository(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ctx := context.Background()
	plain := env.NewNamespace(t, "route-plain")
	tenantNS := env.NewNamespace(t, "route-tenant")
	ns := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: tenantNS}, ns)).To(Succeed())
	ns.Annotations = map[string]string{AnnotationGitRepository: "team", AnnotationGitPath: "teams/blue"}
	g.Expect(env.Client.Update(ctx, ns)).To(Succeed())

	srv := startGitServer(t)
	var made []Tenant
	r := &Router{Default: newDirect(), Reader: mgr.GetClient(), NewTenant: func(_ context.Context, tn Tenant) (*Git, error) {
		made = append(made, tn)
		return NewGit(GitOptions{
			Repo: gitrepo.Options{URL: srv.url(), Branch: gitBranch, Dir: t.TempDir(), Path: tn.Path,
				Author: gitrepo.Author{Name: "Apiary", Email: "apiary@example.com"}},
			Mapper: mgr.GetRESTMapper(), Reader: mgr.GetClient(), Scheme: env.Scheme, Window: 200 * time.Millisecond,
		})
	}}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = r.Start(rctx) }()
	events := r.Subscribe("Colony")

	// The plain namespace's owner is applied directly.
	direct := testOwner(plain, "colony")
	g.Eventually(func() error {
		_, err := r.Apply(ctx, direct, []*unstructured.Unstructured{configMap(plain, "cm", map[string]string{"v": "1"})}, nil)
		return err
	}).WithTimeout(10 * time.Second).Should(Succeed())
	_, err := live(t, configMap(plain, "cm", nil))
	g.Expect(err).NotTo(HaveOccurred())

	// The tenant's owner is committed to its repository and path, once the
	// router has seen the annotation.
	owner := testOwner(tenantNS, "colony")
	set := []*unstructured.Unstructured{configMap(tenantNS, "cm", map[string]string{"v": "1"})}
	g.Eventually(func(g Gomega) {
		res, err := r.Apply(ctx, owner, set, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Pending).To(BeFalse())
		g.Expect(res.Revision).To(Equal(history(t, srv)[0].Hash.String()))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(remoteFile(t, srv, "teams/blue/"+gitrepo.ObjectPath(tenantNS, "ConfigMap", "cm"))).To(ContainSubstring("kind: ConfigMap"))
	_, err = live(t, configMap(tenantNS, "cm", nil))
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	g.Expect(err).To(HaveOccurred(), "not applied directly")
	g.Eventually(events).WithTimeout(10 * time.Second).Should(Receive(WithTransform(
		func(e event.GenericEvent) string { return e.Object.GetNamespace() }, Equal(tenantNS))))
	g.Expect(made).To(ConsistOf(Tenant{Namespace: tenantNS, GitRepository: "team", Path: "teams/blue"}))
	st, err := r.Synced(ctx, mgr.GetClient(), direct, "abc")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Known).To(BeFalse())
}
