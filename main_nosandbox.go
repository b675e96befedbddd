//go:build !sandbox

package main

import (
	"fmt"
	"os"
)

// sandboxMain refuses `apiary sandbox` in a binary built without it. The
// sandbox embeds a control plane and plays k0rdent with Helm's SDK; a
// release binary (the image's) leaves it out, and with it about 13 MB of
// code the manager never runs but would keep partly resident. `make build`
// builds bin/apiary with it (-tags sandbox).
func sandboxMain([]string) int {
	fmt.Fprintln(os.Stderr, "apiary: this binary was built without the sandbox; "+
		"build one with `make build` (go build -tags sandbox) to run `apiary sandbox`")
	return 2
}
