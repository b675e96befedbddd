package conformance

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestExpiresColumnPrintsTheTime asks the API server for the table kubectl
// prints with `kubectl get wsd -o wide`: the Expires column shows when the
// workspace expires as a time. A column of type date would make kubectl turn
// it into an age, which reads "<invalid>" for a time in the future.
func TestExpiresColumnPrintsTheTime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "table")
	w := builder.Workspace(ns, "nb", "cls", "c1")
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	expires := metav1.NewTime(time.Now().Add(3 * time.Hour).Truncate(time.Second))
	w.Status.Lifecycle = &workspacesv1.WorkspaceLifecycleStatus{ExpiresAt: &expires}
	g.Expect(env.Client.Status().Update(ctx, w)).To(Succeed())

	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	raw, err := cs.RESTClient().Get().AbsPath("/apis/workspaces.exalsius.ai/v1/namespaces", ns, "workspacedeployments").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Param("includeObject", "None").DoRaw(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	table := &metav1.Table{}
	g.Expect(json.Unmarshal(raw, table)).To(Succeed())
	col := -1
	for i, c := range table.ColumnDefinitions {
		if c.Name == "Expires" {
			col = i
			// kubectl prints a date column as an age (translateTimestampSince).
			g.Expect(c.Type).NotTo(Equal("date"), "kubectl would print the expiry as an age")
		}
	}
	g.Expect(col).To(BeNumerically(">=", 0), "an Expires column")
	g.Expect(table.Rows).To(HaveLen(1))
	g.Expect(table.Rows[0].Cells[col]).To(Equal(expires.UTC().Format(time.RFC3339)))
}
