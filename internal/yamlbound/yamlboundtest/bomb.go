// Package yamlboundtest builds the hostile YAML the tests of the bounded
// decoders try: one builder for every suite that needs a bomb.
package yamlboundtest

import (
	"fmt"
	"strings"
)

// AliasBomb is a YAML map of nested anchors and aliases: levels levels of
// fan aliases each over an anchored string of width bytes. It is about
// width + levels·fan·5 bytes long and expands to about width·fan^levels.
func AliasBomb(levels, fan, width int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "l0: &l0 %q\n", strings.Repeat("x", width))
	for i := 1; i <= levels; i++ {
		refs := make([]string, fan)
		for j := range refs {
			refs[j] = fmt.Sprintf("*l%d", i-1)
		}
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.Join(refs, ", "))
	}
	return b.String()
}
