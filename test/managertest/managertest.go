// Package managertest runs Apiary's manager inside a test's process with
// the options the test chooses: Start runs a manager until the test ends,
// Restart stops it, runs something while none runs and starts another,
// RestartWith starts one with other options; InProcess is the manager of a
// whole test world (test/world, which may not import internal/manager).
// Reconciles reads how often a controller reconciled, from
// controller-runtime's metrics.
package managertest

import (
	"context"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/apiaryhq/apiary/internal/manager"
)

// StopTimeout bounds how long a stopping manager may take.
const StopTimeout = 30 * time.Second

// Manager is one test's Apiary manager.
type Manager struct {
	t    testing.TB
	opts manager.Options
	stop func()
}

// Start runs a manager with opts until the test ends. Options left zero get
// what tests want: no metrics or probe listeners, the default concurrency, a
// CRD check every second, the logger "apiary" of controller-runtime's root
// logger; several managers may run in one process.
func Start(t testing.TB, opts manager.Options) *Manager {
	t.Helper()
	m := &Manager{t: t, opts: complete(opts)}
	m.start()
	t.Cleanup(m.Stop)
	return m
}

// complete fills in the options a test left zero (see Start).
func complete(opts manager.Options) manager.Options {
	if opts.MetricsBindAddress == "" {
		opts.MetricsBindAddress = "0"
	}
	if opts.HealthProbeBindAddress == "" {
		opts.HealthProbeBindAddress = "0"
	}
	if opts.Concurrency == (manager.Concurrency{}) {
		opts.Concurrency = manager.DefaultConcurrency
	}
	if opts.CRDCheckInterval == 0 {
		opts.CRDCheckInterval = time.Second
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = ctrl.Log.WithName("apiary")
	}
	opts.SkipControllerNameValidation = true
	return opts
}

// Restart stops the manager, runs between while none runs, and starts another.
func (m *Manager) Restart(between func()) {
	m.Stop()
	between()
	m.start()
}

// RestartWith stops the manager and starts one with other options, as an
// operator restarting Apiary with other flags would.
func (m *Manager) RestartWith(opts manager.Options) {
	m.Stop()
	m.opts = complete(opts)
	m.start()
}

// Stop stops the manager and waits for it; stopping a stopped one does nothing.
func (m *Manager) Stop() {
	if m.stop != nil {
		m.stop()
		m.stop = nil
	}
}

func (m *Manager) start() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, m.opts) }()
	m.stop = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				m.t.Errorf("manager: %v", err)
			}
		case <-time.After(StopTimeout):
			m.t.Errorf("manager did not stop within %s", StopTimeout)
		}
	}
}

// Reconciles is how many reconciles the process's controllers named
// controller ran, by controller-runtime's reconcile counter.
func Reconciles(controller string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}
