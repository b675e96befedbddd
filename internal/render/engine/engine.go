package engine

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"

	"helm.sh/helm/v3/pkg/chart"
)

const (
	// rootName is the name of the template set, and of tpl's text.
	rootName = "gotpl"
	// tickFunc is called by the first node of every loop body and defined
	// template: one step of the guard.
	tickFunc = "_apiaryStep"
	// printFunc ends the pipeline of every action that prints: it measures
	// the printed value before fmt expands it.
	printFunc = "_apiaryPrint"
	// maxTemplateChain bounds nested template actions, whose names are
	// fixed: include and tpl are bounded by Limits.MaxDepth.
	maxTemplateChain = 100
)

// Templates are a chart's templates, checked, parsed and instrumented once.
// They are immutable and safe for concurrent use: each Execute renders a
// clone.
type Templates struct {
	chartName string
	set       *template.Template
	// renders are the templates that render a file, in Helm's order.
	renders []string
	trees   map[*parse.Tree]bool
	// calls are the template actions of each tree, by callee name.
	calls map[*parse.Tree][]string
	files files
}

// Compile checks, parses and instruments the templates of c (c.Templates,
// named templates/...); c.Files are the templates' .Files. It refuses
// templates that do not parse, that call an unknown function or a forbidden
// one, and template actions that call their own template. Errors are *Error.
func Compile(c *chart.Chart) (*Templates, error) {
	for _, t := range c.Templates {
		if err := checkTemplate(t.Name, string(t.Data)); err != nil {
			return nil, err
		}
	}
	return compile(c)
}

// compile parses the chart's templates in Helm's order (deeper paths first,
// then by name, last wins for a template defined twice) and instruments
// them.
func compile(c *chart.Chart) (*Templates, error) {
	names := make([]string, 0, len(c.Templates))
	text := map[string]string{}
	for _, t := range c.Templates {
		name := path.Join(c.Name(), t.Name)
		names = append(names, name)
		text[name] = string(t.Data)
	}
	sort.Slice(names, func(i, j int) bool {
		di, dj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		if di != dj {
			return di > dj
		}
		return names[i] > names[j]
	})
	set := template.New(rootName).Option("missingkey=zero").Funcs(placeholderFuncs())
	comp := &Templates{chartName: c.Name(), set: set, trees: map[*parse.Tree]bool{}, files: newFiles(c.Files)}
	for _, name := range names {
		if _, err := set.New(name).Parse(text[name]); err != nil {
			line, msg := parseErrorLocation(err.Error())
			return nil, &Error{File: comp.trimChart(name), Line: line, Err: fmt.Errorf("%s", msg)}
		}
		if !strings.HasPrefix(path.Base(name), "_") {
			comp.renders = append(comp.renders, name)
		}
	}
	comp.calls = map[*parse.Tree][]string{}
	for _, t := range set.Templates() {
		if t.Tree != nil && t.Root != nil {
			comp.calls[t.Tree] = templateCalls(t.Root, nil)
		}
	}
	if _, err := checkTemplateCalls(set, comp.calls); err != nil {
		return nil, &Error{Err: err}
	}
	isFile := map[string]bool{}
	for _, name := range names {
		isFile[name] = true
	}
	instrumentSet(set, isFile, func(*parse.Tree) bool { return false }, func(t *parse.Tree) { comp.trees[t] = true })
	return comp, nil
}

// trimChart removes the chart-name folder before a template's path.
func (c *Templates) trimChart(name string) string {
	return strings.TrimPrefix(name, c.chartName+"/")
}

// placeholderFuncs are the names templates may call, for parsing.
func placeholderFuncs() template.FuncMap {
	m := baseFuncs()
	m["include"] = func(string, any) (string, error) { return "", nil }
	m["tpl"] = func(string, any) (string, error) { return "", nil }
	m[tickFunc] = func() string { return "" }
	m[printFunc] = func(v any) any { return v }
	return m
}

// instrumentSet instruments every tree of set for which skip is false, and
// marks it. Templates named in isFile render a file or a tpl text; the
// others are defined, and start with a step.
func instrumentSet(set *template.Template, isFile map[string]bool, skip func(*parse.Tree) bool, mark func(*parse.Tree)) {
	for _, t := range set.Templates() {
		if t.Tree == nil || t.Root == nil || skip(t.Tree) {
			continue
		}
		mark(t.Tree)
		instrumentList(t.Tree, t.Root)
		if !isFile[t.Name()] {
			t.Root.Nodes = append([]parse.Node{tick(t.Tree, t.Root.Pos)}, t.Root.Nodes...)
		}
	}
}

// instrumentList ends every printing action with printFunc and starts every
// loop body with tickFunc.
func instrumentList(tree *parse.Tree, list *parse.ListNode) {
	if list == nil {
		return
	}
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			if len(n.Pipe.Decl) == 0 {
				n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos,
					Args: []parse.Node{parse.NewIdentifier(printFunc).SetTree(tree).SetPos(n.Pos)}})
			}
		case *parse.IfNode:
			instrumentList(tree, n.List)
			instrumentList(tree, n.ElseList)
		case *parse.WithNode:
			instrumentList(tree, n.List)
			instrumentList(tree, n.ElseList)
		case *parse.RangeNode:
			instrumentList(tree, n.List)
			instrumentList(tree, n.ElseList)
			n.List.Nodes = append([]parse.Node{tick(tree, n.List.Pos)}, n.List.Nodes...)
		}
	}
}

// tick is the action {{_apiaryStep}}, which prints nothing.
func tick(tree *parse.Tree, pos parse.Pos) parse.Node {
	ident := parse.NewIdentifier(tickFunc).SetTree(tree).SetPos(pos)
	cmd := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{ident}}
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos,
		Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Cmds: []*parse.CommandNode{cmd}}}
}
