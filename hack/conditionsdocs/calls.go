package main

import (
	"bytes"
	"go/ast"
	"go/printer"
	"go/token"
	"path"
	"sort"
	"strconv"
)

// calleeName is the name of the function a call calls: f(...) or x.f(...).
func calleeName(call *ast.CallExpr) string {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn.Name
	case *ast.SelectorExpr:
		return fn.Sel.Name
	}
	return ""
}

// reasonIndexes adds, to Flux's helpers, every function of the source with
// a parameter named reason, by name and index.
func reasonIndexes(files []goFile) map[string]int {
	out := map[string]int{}
	for k, v := range reasonParams {
		out[k] = v
	}
	for _, f := range files {
		for _, decl := range f.file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			i := 0
			for _, field := range fd.Type.Params.List {
				names := len(field.Names)
				if names == 0 {
					names = 1
				}
				for _, n := range field.Names {
					if n.Name == "reason" {
						out[fd.Name.Name] = i
					}
					i++
				}
				if len(field.Names) == 0 {
					i += names
				}
			}
		}
	}
	return out
}

// literals finds the reasons written as string literals, and those made by
// a conversion string(x), where a reason is set: an argument passed as a
// reason (to Flux's conditions helpers, to an event recorder's Eventf, or to
// a function's reason parameter), the Reason field of a composite literal,
// and an assignment to a Reason field or to a variable named reason.
func literals(fset *token.FileSet, files []goFile) ([]Literal, []Conversion) {
	idx := reasonIndexes(files)
	byValue := map[string]map[string]bool{}
	var convs []Conversion
	add := func(e ast.Expr, file string) {
		if call, ok := e.(*ast.CallExpr); ok && len(call.Args) == 1 {
			if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "string" {
				convs = append(convs, Conversion{Expr: expr(fset, call), File: file})
			}
			return
		}
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		v, err := strconv.Unquote(lit.Value)
		if err != nil || v == "" {
			return
		}
		if byValue[v] == nil {
			byValue[v] = map[string]bool{}
		}
		byValue[v][file] = true
	}
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if i, ok := idx[calleeName(x)]; ok && i < len(x.Args) {
					add(x.Args[i], f.rel)
				}
			case *ast.KeyValueExpr:
				if k, ok := x.Key.(*ast.Ident); ok && k.Name == "Reason" {
					add(x.Value, f.rel)
				}
			case *ast.AssignStmt:
				if len(x.Lhs) != len(x.Rhs) {
					return true
				}
				for i, lhs := range x.Lhs {
					if isReasonTarget(lhs) {
						add(x.Rhs[i], f.rel)
					}
				}
			}
			return true
		})
	}
	var out []Literal
	for v, set := range byValue {
		l := Literal{Value: v}
		for file := range set {
			l.Files = append(l.Files, file)
		}
		sort.Strings(l.Files)
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	sort.SliceStable(convs, func(i, j int) bool { return convs[i].File < convs[j].File })
	return out, convs
}

// isReasonTarget reports whether an assignment to e sets a reason: e is a
// Reason field (x.Reason) or a variable named reason.
func isReasonTarget(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "Reason"
	case *ast.Ident:
		return x.Name == "reason"
	}
	return false
}

// events finds the calls of an event recorder's Eventf (the reason is its
// fourth argument). When the reason is a parameter of the function around
// the call, the reasons that function's callers pass are listed too.
func events(fset *token.FileSet, files []goFile) []Event {
	var out []Event
	for _, f := range files {
		for _, decl := range f.file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || calleeName(call) != "Eventf" || len(call.Args) < 4 {
					return true
				}
				ev := Event{File: f.rel, Func: fd.Name.Name, Doc: docOf(fd.Doc),
					Type: expr(fset, call.Args[2]), Reason: expr(fset, call.Args[3])}
				if id, ok := call.Args[3].(*ast.Ident); ok && isParam(fd, id.Name) {
					ev.Reasons = callerReasons(fset, files, path.Dir(f.rel), fd, id.Name)
				}
				out = append(out, ev)
				return true
			})
		}
	}
	return out
}

func isParam(fd *ast.FuncDecl, name string) bool {
	for _, field := range fd.Type.Params.List {
		for _, n := range field.Names {
			if n.Name == name {
				return true
			}
		}
	}
	return false
}

// callerReasons lists the arguments passed for param to fd by the files of
// its package.
func callerReasons(fset *token.FileSet, files []goFile, dir string, fd *ast.FuncDecl, param string) []string {
	i := 0
	for _, field := range fd.Type.Params.List {
		for _, n := range field.Names {
			if n.Name == param {
				goto found
			}
			i++
		}
	}
found:
	set := map[string]bool{}
	for _, f := range files {
		if path.Dir(f.rel) != dir {
			continue
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && calleeName(call) == fd.Name.Name && i < len(call.Args) {
				set[expr(fset, call.Args[i])] = true
			}
			return true
		})
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func expr(fset *token.FileSet, e ast.Expr) string {
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, e); err != nil {
		return "?"
	}
	return b.String()
}
