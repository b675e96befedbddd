package docs_test

// repoTops are the repository's top folders: a path in inline code that
// starts with one of them names a file of the repository.
var repoTops = map[string]bool{
	"api": true, "internal": true, "docs": true, "charts": true, "config": true, "hack": true, "test": true,
	"examples": true, "templates": true, "gitops-examples": true, ".github": true,
}

// foreignFlags are flags the documents name that belong to other programs,
// with whose they are.
var foreignFlags = map[string]string{
	"watch-label-selector":    "Flux's controllers",
	"default-service-account": "Flux's kustomize-controller",
	"total-shards":            "kube-state-metrics",
	"force-conflicts":         "kubectl apply --server-side",
	"feature-gates":           "Flux's kustomize-controller",
}

// foreignPaths are paths in other projects' repositories that the
// documents name.
var foreignPaths = map[string]string{
	"internal/controller/adapters/sveltos/serviceset_controller.go": "k0rdent's kcm",
}

// foreignReasons are condition types and reasons the documents name that
// other controllers set (k0rdent, Flux, Kubernetes), with whose they are.
var foreignReasons = map[string]string{}
