package gitops_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// secretValue is a workspace's secret; no commit may hold it in plaintext.
const secretValue = "s3cret-never-in-git"

func keyOf(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// TestWorkspaceWithSecretThroughGit runs a workspace with a secret value on
// a cluster of a Git-delivered Colony: its ServiceSet and values Secret are
// committed (the Secret encrypted with SOPS), Flux decrypts and applies
// them, the stand-in installs the release, the workspace runs; deleting it
// prunes its objects.
func TestWorkspaceWithSecretThroughGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-ws")
	k0rdentFixtures(t, ns)
	c := colony(ns, "fleet", "gpu")
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	eventuallyTrue(t, c, commonv1.ReadyCondition)

	class := builder.NewClass(ns, "notebook", builder.Named("notebook-"+ns), func(c *workspacesv1.WorkspaceClass) {
		c.Spec.UserFacingConfig = []workspacesv1.UserFacingConfigField{{HelmValuePath: "password", DisplayName: "Password", Type: workspacesv1.UserFacingConfigSecret}}
	})
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	w := builder.Workspace(ns, "nb", class.Name, "fleet-gpu")
	w.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"password":"` + secretValue + `"}`)}
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	w = eventuallyTrue(t, w, commonv1.CommittedCondition, commonv1.SyncedCondition, commonv1.ReadyCondition)
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))

	// The values Secret reached the cluster decrypted, and Git holds it sealed.
	var values *corev1.Secret
	secrets := &corev1.SecretList{}
	g.Expect(env.Client.List(ctx, secrets, client.InNamespace(ns))).To(Succeed())
	for i := range secrets.Items {
		if strings.HasSuffix(secrets.Items[i].Name, "-values") {
			values = &secrets.Items[i]
		}
	}
	g.Expect(values).NotTo(BeNil(), "the values Secret was applied by Flux")
	g.Expect(string(values.Data["values.yaml"])).To(ContainSubstring(secretValue))
	sealed := headFile(t, objectFile(ns, "secret", values.Name))
	g.Expect(sealed).To(ContainSubstring("sops:"))
	g.Expect(sealed).NotTo(ContainSubstring(secretValue))

	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	eventuallyGone(t, w)
	eventuallyGone(t, values)
	g.Expect(headFile(t, objectFile(ns, "secret", values.Name))).To(BeEmpty())
}
