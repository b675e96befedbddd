// Package workspace is the controller of the WorkspaceDeployment kind
// (workspaces.exalsius.ai). It owns a workspace's status, phase, conditions
// and finalizer, and what is delivered for it: its k0rdent ServiceSet and
// values Secret, its child namespace (childns), its routes (routing), its
// GPU admission and quota charge, and its lifecycle (stop, start, expiry,
// idle culling). It renders the workspace's objects (desired) and installs
// its class's prerequisites through internal/prerequisite/install. It also
// sweeps the ServiceSets whose workspace is gone (OrphanSweeper). The
// reasons it sets are those of api/workspaces/v1 and api/common/v1. Neither
// it nor its sub-packages import another kind's package (kinds_test.go).
package workspace
