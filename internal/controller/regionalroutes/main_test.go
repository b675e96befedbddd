package regionalroutes

import (
	"testing"

	"github.com/apiaryhq/apiary/test/world"
)

var running *world.Running

// TestMain starts a management control plane (no manager): the sharded
// count reads workspaces on the API server.
func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "regionalroutes", Management: true}, func(r *world.Running) error {
		running = r
		return nil
	})
}
