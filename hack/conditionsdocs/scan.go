package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// module is the import path of the repository's module.
const module = "github.com/apiaryhq/apiary"

// Constant is a string constant of the API: a condition type, a reason or a
// phase.
type Constant struct {
	Name  string // the Go name, e.g. ReadyCondition
	Value string // the string it stands for, e.g. Ready
	Pkg   string // the directory of its package, relative to the root
	Doc   string // its doc comment (or trailing or group comment), one line
	Kind  string // condition, reason or phase
	// ExalsiusOnly marks a reason of an exalsius-only list: a const group
	// whose doc comment holds the directive //apiary:exalsius-only.
	ExalsiusOnly bool
	Users        []string
}

// Literal is a reason written as a string literal where a reason is passed.
type Literal struct {
	Value string
	Files []string
}

// Conversion is a reason made by a conversion, string(x), where a reason is
// passed: a phase that does not go through commonv1.PhaseReason.
type Conversion struct {
	Expr string // the conversion as written
	File string
}

// Event is a call that records a Kubernetes event.
type Event struct {
	File, Func, Doc string
	Type, Reason    string   // the expressions passed, as written
	Reasons         []string // the reasons a wrapper's callers pass
}

// Scan is what the generator reads from the source.
type Scan struct {
	Constants   []Constant
	Literals    []Literal
	Conversions []Conversion
	Events      []Event
}

type goFile struct {
	rel  string // path relative to the root, slash-separated
	file *ast.File
}

// reasonParams names the functions whose parameter at the index is a
// reason: Flux's conditions helpers, which Apiary calls, and an event
// recorder's Eventf (regarding, related, type, reason, action, note).
var reasonParams = map[string]int{
	"MarkTrue": 2, "MarkFalse": 2, "MarkUnknown": 2, "MarkReconciling": 1, "MarkStalled": 1,
	"Eventf": 3,
}

// scan parses the non-test Go files under root's api and internal folders.
func scan(root string) (*Scan, error) {
	fset := token.NewFileSet()
	var files []goFile
	for _, dir := range []string{"api", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testenv" {
				return filepath.SkipDir // the tests' stand-ins for other projects' controllers
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
				strings.HasPrefix(d.Name(), "zz_generated") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return fmt.Errorf("parsing %s: %w", p, err)
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, goFile{rel: filepath.ToSlash(rel), file: f})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	out := &Scan{Constants: constants(files)}
	out.Literals, out.Conversions = literals(fset, files)
	out.Events = events(fset, files)
	for i := range out.Constants {
		out.Constants[i].Users = users(files, out.Constants[i])
	}
	return out, nil
}

// constants finds the string constants of the API packages whose name ends
// in Condition or Reason (or that sit in a group of reasons), and those of a
// type whose name ends in Phase.
func constants(files []goFile) []Constant {
	var out []Constant
	for _, f := range files {
		inAPI := strings.HasPrefix(f.rel, "api/")
		for _, decl := range f.file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			exalsiusOnly := isExalsiusOnly(gd.Doc)
			reasonGroup := false
			for _, s := range gd.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					reasonGroup = reasonGroup || strings.HasSuffix(n.Name, "Reason")
				}
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					value, err := strconv.Unquote(lit.Value)
					if err != nil {
						continue
					}
					kind := kindOf(n.Name, vs.Type, inAPI, reasonGroup)
					if kind == "" {
						continue
					}
					out = append(out, Constant{Name: n.Name, Value: value, Pkg: path.Dir(f.rel), Kind: kind,
						Doc: docOf(vs.Doc, vs.Comment, gd.Doc), ExalsiusOnly: exalsiusOnly && kind == "reason"})
				}
			}
		}
	}
	return out
}

func kindOf(name string, typ ast.Expr, inAPI, reasonGroup bool) string {
	if id, ok := typ.(*ast.Ident); ok && inAPI && strings.HasSuffix(id.Name, "Phase") {
		return "phase"
	}
	switch {
	case typ != nil:
		return ""
	case inAPI && strings.HasSuffix(name, "Condition"):
		return "condition"
	case strings.HasSuffix(name, "Reason"), inAPI && reasonGroup && !strings.HasSuffix(name, "Condition"):
		return "reason"
	}
	return ""
}

// exalsiusOnlyDirective marks, in the doc comment of a const group, the
// reasons that only the exalsius operator sets: kept for clients written
// against it, never set by Apiary.
const exalsiusOnlyDirective = "//apiary:exalsius-only"

func isExalsiusOnly(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if strings.TrimSpace(c.Text) == exalsiusOnlyDirective {
			return true
		}
	}
	return false
}

// docOf is the first sentence of the first comment present, on one line.
func docOf(groups ...*ast.CommentGroup) string {
	for _, g := range groups {
		if g == nil {
			continue
		}
		text := strings.Join(strings.Fields(g.Text()), " ")
		if text == "" {
			continue
		}
		if i := strings.Index(text, ". "); i >= 0 {
			text = text[:i+1]
		}
		return text
	}
	return ""
}

// importName is the name a file uses for the package in dir, or "".
func importName(f *ast.File, dir string) string {
	want := module + "/" + dir
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == want {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path.Base(dir)
		}
	}
	return ""
}

// users lists the files outside the API that name the constant.
func users(files []goFile, c Constant) []string {
	var out []string
	for _, f := range files {
		if strings.HasPrefix(f.rel, "api/") {
			continue
		}
		same := path.Dir(f.rel) == c.Pkg
		name := importName(f.file, c.Pkg)
		if !same && name == "" {
			continue
		}
		found := false
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			if found {
				return false
			}
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && name != "" && id.Name == name && x.Sel.Name == c.Name {
					found = true
				}
				return false
			case *ast.ValueSpec:
				// The names a spec declares are no use of the constant.
				for _, v := range x.Values {
					ast.Inspect(v, visit)
				}
				return false
			case *ast.Ident:
				found = same && x.Name == c.Name
			}
			return true
		}
		ast.Inspect(f.file, visit)
		if found {
			out = append(out, f.rel)
		}
	}
	return out
}
