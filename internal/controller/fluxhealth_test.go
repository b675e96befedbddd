package controller_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/apis/kustomize"
	fluxcel "github.com/fluxcd/pkg/runtime/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// healthCheckDoc is the one source of Apiary's Flux healthCheckExprs.
const healthCheckDoc = "../../docs/flux-health-checks.md"

var (
	fluxHealthOnce sync.Once
	fluxHealth     map[string]*fluxcel.StatusEvaluator // by kind
	fluxHealthErr  error
)

// loadFluxHealth reads the Kustomization of the doc's yaml block and builds
// Flux's evaluator for each kind it names.
func loadFluxHealth() (map[string]*fluxcel.StatusEvaluator, error) {
	fluxHealthOnce.Do(func() {
		data, err := os.ReadFile(healthCheckDoc)
		if err != nil {
			fluxHealthErr = err
			return
		}
		_, rest, ok := strings.Cut(string(data), "```yaml\n")
		block, _, ok2 := strings.Cut(rest, "```")
		if !ok || !ok2 {
			fluxHealthErr = fmt.Errorf("%s: no yaml block", healthCheckDoc)
			return
		}
		var ks struct {
			Spec struct {
				HealthCheckExprs []kustomize.CustomHealthCheck `json:"healthCheckExprs"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(block), &ks); err != nil {
			fluxHealthErr = fmt.Errorf("%s: %w", healthCheckDoc, err)
			return
		}
		fluxHealth = map[string]*fluxcel.StatusEvaluator{}
		for _, hc := range ks.Spec.HealthCheckExprs {
			ev, err := fluxcel.NewStatusEvaluator(&hc.HealthCheckExpressions)
			if err != nil {
				fluxHealthErr = fmt.Errorf("%s %s: %w", hc.APIVersion, hc.Kind, err)
				return
			}
			fluxHealth[hc.Kind] = ev
		}
	})
	return fluxHealth, fluxHealthErr
}

// fluxHealthOf is the status Flux's kustomize-controller gives obj with the
// doc's healthCheckExprs for its kind.
func fluxHealthOf(kind string, obj client.Object) (status.Status, error) {
	evs, err := loadFluxHealth()
	if err != nil {
		return "", err
	}
	ev, ok := evs[kind]
	if !ok {
		return "", fmt.Errorf("%s names no healthCheckExprs for %s", healthCheckDoc, kind)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", err
	}
	res, err := ev.Evaluate(context.Background(), &unstructured.Unstructured{Object: m})
	if err != nil {
		return "", err
	}
	return status.Status(res.Status), nil
}
