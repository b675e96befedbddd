package managertest

import (
	"context"
	"path/filepath"

	"k8s.io/client-go/rest"

	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/test/world"
)

// InProcess is a manager with opts run in the test's process for a whole
// world (world.World.Manager): options left zero are completed as Start
// completes them, the RestConfig is the world's management cluster unless
// set, and a Git checkout folder left empty is "checkout" in the world's
// work folder.
func InProcess(opts manager.Options) world.ManagerFunc {
	return func(ctx context.Context, cfg *rest.Config, dir string) error {
		o := complete(opts)
		if o.RestConfig == nil {
			o.RestConfig = cfg
		}
		if o.Git != nil && o.Git.CheckoutDir == "" {
			git := *o.Git
			git.CheckoutDir = filepath.Join(dir, "checkout")
			o.Git = &git
		}
		return manager.Run(ctx, o)
	}
}
