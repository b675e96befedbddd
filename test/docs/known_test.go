package docs_test

import (
	"bufio"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"
)

// root is the repository's root, from this package's folder.
const root = "../.."

// flagMethods are the flag.FlagSet methods that define a flag; the name is
// the first string literal passed.
var flagMethods = regexp.MustCompile(`^((String|Bool|Int|Int64|Uint|Uint64|Float64|Duration|Func|BoolFunc|Text)(Var)?|Var)$`)

// flagSources are the folders whose non-test Go files define the flags of
// the manager and its subcommands (render, sandbox, uninstall, usage, queue, version).
var flagSources = []string{".", "internal/offline", "internal/sandbox", "internal/uninstall", "internal/usagereport", "internal/queueview", "internal/version"}

// knownFlags reads the flag names the code defines, and zap's logging flags,
// which main binds.
func knownFlags(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, dir := range flagSources {
		inspectSource(t, dir, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !flagMethods.MatchString(sel.Sel.Name) {
				return true
			}
			for _, a := range call.Args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if name, err := strconv.Unquote(lit.Value); err == nil {
						out[name] = true
					}
					break
				}
			}
			return true
		})
	}
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	(&zap.Options{}).BindFlags(zfs)
	zfs.VisitAll(func(f *flag.Flag) { out[f.Name] = true })
	// The flag package answers -h and --help itself, for every command.
	out["help"], out["h"] = true, true
	if !out["leader-elect"] || !out["zap-log-level"] {
		t.Fatalf("the flag scan found too little: %d flags", len(out))
	}
	return out
}

var makeTarget = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*):([^=]|$)`)

// knownTargets reads the Makefile's targets.
func knownTargets(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := makeTarget.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// knownMetrics reads the metric names Apiary's code exports (internal/metrics:
// the Name of an Opts, or the name given to desc) and those the chart's
// kube-state-metrics configuration makes.
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	add := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if name, err := strconv.Unquote(lit.Value); err == nil {
				out["apiary_"+name] = true
			}
		}
	}
	inspectSource(t, "internal/metrics", func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.KeyValueExpr:
			if k, ok := x.Key.(*ast.Ident); ok && k.Name == "Name" {
				add(x.Value)
			}
		case *ast.CallExpr:
			if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "desc" && len(x.Args) > 0 {
				add(x.Args[0])
			}
		}
		return true
	})
	data, err := os.ReadFile(filepath.Join(root, "charts/apiary/files/kube-state-metrics.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ksm struct {
		Spec struct {
			Resources []struct {
				MetricNamePrefix string `json:"metricNamePrefix"`
				Metrics          []struct {
					Name string `json:"name"`
				} `json:"metrics"`
			} `json:"resources"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &ksm); err != nil {
		t.Fatalf("parsing the kube-state-metrics configuration: %v", err)
	}
	for _, r := range ksm.Spec.Resources {
		for _, m := range r.Metrics {
			out[r.MetricNamePrefix+"_"+m.Name] = true
		}
	}
	if !out["apiary_build_info"] || !out["apiary_resource_info"] {
		t.Fatalf("the metric scan found too little: %v", out)
	}
	return out
}

var conditionsRow = regexp.MustCompile("^\\| `([A-Za-z]+)` \\|(?: `[^`]*\\.([A-Za-z]+)` \\|)?")

// knownReasons reads every condition type, reason, phase and event reason
// of docs/conditions.md, which TestConditionsDocIsFresh (hack/conditionsdocs)
// keeps equal to what the code sets.
func knownReasons(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs/conditions.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := conditionsRow.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
			if m[2] != "" {
				out[m[2]] = true // the Go constant, as the events table names it
			}
		}
	}
	if !out["Ready"] || !out["RenderFailed"] {
		t.Fatalf("docs/conditions.md gave too little: %d names", len(out))
	}
	return out
}

// inspectSource walks the syntax of the non-test Go files of dir (relative
// to the repository's root) with visit, as ast.Inspect does.
func inspectSource(t *testing.T, dir string, visit func(ast.Node) bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", file, err)
		}
		ast.Inspect(f, visit)
	}
}
