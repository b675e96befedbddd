package controllertest

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/test/standin"
)

// Timeout is how long the suites wait for what a controller makes.
const Timeout = 30 * time.Second

// K0rdentFixtures creates the ClusterTemplate and Credential a Colony entry references.
func K0rdentFixtures(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{
		standin.NewClusterTemplate(ns, "exalsius-remote-cluster-0-1-5", true),
		standin.NewCredential(ns, "remote-cred", true),
	} {
		if err := standin.CreateWithStatus(ctx, Env.Client, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
}

// ColonyEntry is a Colony entry named name that the stand-in makes ready,
// with the template and credential of K0rdentFixtures.
func ColonyEntry(name string) infrav1.ColonyCluster {
	return infrav1.ColonyCluster{
		ClusterName: name,
		ClusterDeploymentSpec: &runtime.RawExtension{Raw: []byte(
			`{"template":"exalsius-remote-cluster-0-1-5","credential":"remote-cred","config":{"controlPlaneNumber":1}}`)},
	}
}

// UpdateSpec re-reads obj, changes it with mutate and updates it, again
// while the update conflicts with the controllers' status writes.
func UpdateSpec[T client.Object](g Gomega, obj T, mutate func(T)) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := Env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return Env.Client.Update(context.Background(), obj)
	})).To(Succeed())
}

// Condition is obj's condition of type t, or nil.
func Condition(obj interface{ GetConditions() []metav1.Condition }, t string) *metav1.Condition {
	return apimeta.FindStatusCondition(obj.GetConditions(), t)
}

// RawJSON is s as an apiextensions JSON value.
func RawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// ConditionStatus is the status of obj's condition of type t, or "" if
// it has none.
func ConditionStatus(obj interface{ GetConditions() []metav1.Condition }, t string) metav1.ConditionStatus {
	if c := Condition(obj, t); c != nil {
		return c.Status
	}
	return ""
}
