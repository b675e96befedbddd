// Package scheme builds the runtime.Scheme shared by the manager, the
// command-line tools and the tests: client-go's types, Apiary's API groups and
// the k0rdent subset Apiary reads and writes.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// New returns a scheme holding every type Apiary uses.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(infrav1.AddToScheme(s))
	utilruntime.Must(workspacesv1.AddToScheme(s))
	utilruntime.Must(k0rdentv1beta1.AddToScheme(s))
	utilruntime.Must(quotav1alpha1.AddToScheme(s))
	return s
}
