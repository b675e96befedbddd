package controllertest

import (
	"context"
	"fmt"
	"sync"

	fluxcel "github.com/fluxcd/pkg/runtime/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/testenv"
)

var (
	fluxHealthOnce sync.Once
	fluxHealth     map[string]*fluxcel.StatusEvaluator // by kind
	fluxHealthErr  error
)

// loadFluxHealth reads the Kustomization of the doc's yaml block and builds
// Flux's evaluator for each kind it names.
func loadFluxHealth() (map[string]*fluxcel.StatusEvaluator, error) {
	fluxHealthOnce.Do(func() {
		exprs, err := testenv.HealthCheckExprs()
		if err != nil {
			fluxHealthErr = err
			return
		}
		fluxHealth = map[string]*fluxcel.StatusEvaluator{}
		for _, hc := range exprs {
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
		return "", fmt.Errorf("%s names no healthCheckExprs for %s", testenv.HealthChecksDoc, kind)
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
