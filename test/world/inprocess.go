package world

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
)

// StopTimeout bounds how long a stopping manager may take.
const StopTimeout = 30 * time.Second

// InProcess is the world's in-process manager (World.Manager).
type InProcess struct {
	run    ManagerFunc
	cfg    *rest.Config
	dir    string
	cancel context.CancelFunc
	done   chan error
}

// Start runs the manager until Stop.
func (p *InProcess) Start() {
	var ctx context.Context
	ctx, p.cancel = context.WithCancel(context.Background())
	p.done = make(chan error, 1)
	go func() { p.done <- p.run(ctx, p.cfg, p.dir) }()
}

// Stop stops the manager and waits until it returned; stopping a stopped
// one does nothing.
func (p *InProcess) Stop() error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	p.cancel = nil
	select {
	case err := <-p.done:
		return err
	case <-time.After(StopTimeout):
		return fmt.Errorf("the manager did not stop within %s", StopTimeout)
	}
}
