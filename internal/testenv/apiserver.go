package testenv

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// WithRestartableAPIServer keeps the API server's certificates in a folder of
// their own, so that StopAPIServer and StartAPIServer can restart it on the
// same port with the same serving and client certificates: every config and
// kubeconfig handed out stays valid across the restart.
func WithRestartableAPIServer() Option { return func(o *options) { o.restartable = true } }

// StopAPIServer stops the API server and leaves etcd running, as when a
// control plane's API server restarts: SIGTERM, and SIGKILL when it has not
// stopped within the environment's stop timeout (30s, WithStopTimeout) (a loaded API server
// with open watches may not stop gracefully; a controller must survive
// both). It reports whether the
// server had to be killed, and returns once its port is closed. Clients see
// connection errors until StartAPIServer.
func (e *Environment) StopAPIServer() (killed bool, err error) {
	if e.certDir == "" {
		return false, errors.New("the environment was not started WithRestartableAPIServer")
	}
	api := e.env.ControlPlane.APIServer
	if err := api.Stop(); err != nil {
		// envtest sends SIGKILL when SIGTERM did not stop the server in time.
		if !strings.HasPrefix(err.Error(), "timeout waiting for process") || strings.Contains(err.Error(), "unable to kill") {
			return false, fmt.Errorf("stopping the API server: %w", err)
		}
		killed = true
	}
	addr := api.SecureServing.ListenAddr.HostPort()
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return killed, nil
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("the API server still listens on %s after it was stopped", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StartAPIServer starts the API server stopped by StopAPIServer again, on
// the same port and etcd, and waits until it is healthy.
func (e *Environment) StartAPIServer() error {
	if e.certDir == "" {
		return errors.New("the environment was not started WithRestartableAPIServer")
	}
	if err := e.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("starting the API server again: %w", err)
	}
	return nil
}
