package controller_test

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// controllerPkg is the import path of the package of the controllers; each
// kind's reconciler lives in a package below it.
const controllerPkg = "github.com/apiaryhq/apiary/internal/controller"

// sharedControllerPkgs are the packages below controllerPkg that are no
// kind's: every kind may import them.
var sharedControllerPkgs = map[string]bool{"index": true, "reconciler": true}

// TestNoKindImportsAnotherKind fails when the package of one kind under
// internal/controller (or a package below it) imports the package of another
// kind: what two kinds share lives outside internal/controller (as the
// prerequisite Installer does in internal/prerequisite/install), or in a
// shared package (sharedControllerPkgs). Test files are not counted.
func TestNoKindImportsAnotherKind(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", controllerPkg+"/...").Output()
	g.Expect(err).NotTo(HaveOccurred(), "go list: %s", exitStderr(err))
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		imports[fields[0]] = fields[1:]
	}
	g.Expect(imports).To(HaveKey(controllerPkg+"/workspace"), "go list found the kinds' packages")
	g.Expect(kindImports(imports)).To(BeEmpty())
}

// TestKindImportsAreFound: the rule of TestNoKindImportsAnotherKind on
// planted imports, so that it is known to fail.
func TestKindImportsAreFound(t *testing.T) {
	g := NewWithT(t)
	planted := map[string][]string{
		controllerPkg:                            {controllerPkg + "/colony", controllerPkg + "/workspace"},
		controllerPkg + "/workspace":             {controllerPkg + "/prerequisite", controllerPkg + "/reconciler", "fmt"},
		controllerPkg + "/workspace/routing":     {controllerPkg + "/workspace/childns", controllerPkg + "/colony/internals"},
		controllerPkg + "/workspace/childns":     {controllerPkg + "/index"},
		controllerPkg + "/prerequisite":          {"github.com/apiaryhq/apiary/internal/prerequisite/install"},
		controllerPkg + "/reconciler":            {controllerPkg + "/index"},
		controllerPkg + "/colony":                {controllerPkg + "/reconciler"},
		controllerPkg + "/colony/internals":      nil,
		controllerPkg + "/workspaceclassfriends": {controllerPkg + "/workspaceclass"},
	}
	g.Expect(kindImports(planted)).To(Equal([]string{
		"internal/controller/workspace imports internal/controller/prerequisite: the kinds workspace and prerequisite must not import each other",
		"internal/controller/workspace/routing imports internal/controller/colony/internals: the kinds workspace and colony must not import each other",
		"internal/controller/workspaceclassfriends imports internal/controller/workspaceclass: the kinds workspaceclassfriends and workspaceclass must not import each other",
	}))
}

// kindImports lists, sorted, the imports of one kind's package of another
// kind's, given the imports of each package.
func kindImports(imports map[string][]string) []string {
	var out []string
	for pkg, deps := range imports {
		from := kindOf(pkg)
		if from == "" {
			continue
		}
		for _, dep := range deps {
			if to := kindOf(dep); to != "" && to != from {
				out = append(out, fmt.Sprintf("%s imports %s: the kinds %s and %s must not import each other",
					strings.TrimPrefix(pkg, "github.com/apiaryhq/apiary/"), strings.TrimPrefix(dep, "github.com/apiaryhq/apiary/"), from, to))
			}
		}
	}
	sort.Strings(out)
	return out
}

// kindOf is the kind whose package pkg is or lies below, or "" for a
// package that is no kind's (internal/controller itself, a shared one, or
// one outside internal/controller).
func kindOf(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, controllerPkg+"/")
	if !ok {
		return ""
	}
	kind, _, _ := strings.Cut(rest, "/")
	if sharedControllerPkgs[kind] {
		return ""
	}
	return kind
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
